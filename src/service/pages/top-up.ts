import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceError } from '../contract/problems.js';
import { LIMITS } from '../contract/limits.js';
import { MAX_TOP_UP } from '../contract/settings.js';
import type { Service } from '../service.js';
import { html, isSameOrigin, readForm, renderPage, sendPage, unsafeRaw } from './page.js';

/** Where the top-up page is: the URL of spec 7's `user_action: { kind: 'top_up', url }` and of the assistant's `get_topup_link`. */
export const TOP_UP_PAGE_PATH = '/settings/top-up';
/** Where its form posts (the path itself takes the keyed JSON `POST /settings/top-up`). */
export const TOP_UP_FORM_PATH = '/settings/top-up/form';

/**
 * The top-up page, what the real service's payment page is to a person: sign in with an API key of the
 * account, choose how many credits to add, and see the new balance. Simulated: nothing is paid. The
 * form posts only from its own page, and adds through the same `topUp` as `POST /settings/top-up`.
 */
export async function showTopUp(res: ServerResponse): Promise<undefined> {
  return sendPage(res, 200, topUpPage({}));
}

/** POST of the page's form (`api_key`, `credits`). */
export async function receiveTopUp(service: Service, req: IncomingMessage, res: ServerResponse): Promise<undefined> {
  if (!isSameOrigin(req, service.origin)) {
    req.resume();
    return sendPage(res, 403, renderPage({ title: 'Not allowed', main: html`<p>This form can only be sent from its own page.</p>` }));
  }
  const read = await readForm(req);
  if ('error' in read) return sendPage(res, read.error === 'too_large' ? 413 : 400, topUpPage({ error: 'The form could not be read. Send it again.' }));
  const credits = (read.form.get('credits') ?? '').trim();
  const amount = Number(credits);
  if (!(/^\d+$/.test(credits) && amount >= 1 && amount <= MAX_TOP_UP)) {
    return sendPage(res, 400, topUpPage({ error: `Credits is a whole number from 1 to ${MAX_TOP_UP.toLocaleString('en')}.`, credits }));
  }
  // The settings' own checks: the key (401), its rate limit (429); a low balance is fine, being why one is here.
  // The address's failed sign-ins count too (issue 20 item 6): a page is no way around the limit.
  let balance: number;
  try {
    const { gate } = service;
    const { caller, decision } = await gate.admit(gate.identify(`Bearer ${(read.form.get('api_key') ?? '').trim()}`, req.socket.remoteAddress));
    if (!decision.allowed) throw new ServiceError('rate_limit_exceeded', 'Too many requests with this key.', { retryAfter: decision.retryAfter });
    // The settings' own top-up, as POST /settings/top-up: saved whole, or taken back and refused (issue 20 item 9).
    balance = (await service.store.unit(async () => service.account.topUp(caller, amount))).balance;
  } catch (error) {
    const refusal = error instanceof ServiceError ? error : new ServiceError('upstream_busy', 'Not saved.', { retryAfter: 5 });
    const status = refusal.code === 'invalid_api_key' || refusal.code === 'invalid_auth_header' ? 401 : refusal.code === 'rate_limit_exceeded' ? 429 : 503;
    const wait = refusal.retryAfter;
    const message =
      status === 401 ? 'That API key is unknown or was revoked. Use a key of the account, as shown by cliphook serve.'
      : status === 429 ? `Too many requests with this key, or too many wrong keys from this computer; wait ${wait ?? LIMITS.rateWindowMs / 1000} seconds and send it again.`
      : 'The service is busy; nothing was added. Send it again in a few seconds.';
    return sendPage(res, status, topUpPage({ error: message, credits }), wait === undefined ? {} : { 'retry-after': String(wait) });
  }
  return sendPage(
    res,
    200,
    renderPage({
      title: 'Credits added',
      main: html`<div class="notice success" role="status"><p>Added ${amount.toLocaleString('en')} credits. The balance is now ${balance.toLocaleString('en')} credits.</p></div>
<p>You can close this page and go back to the assistant or your app.</p>`,
    }),
  );
}

function topUpPage({ error, credits = '' }: { error?: string; credits?: string }): string {
  return renderPage({
    title: 'Add credits',
    main: html`${error ? html`<div class="notice error" role="alert" id="form-error"><p>${error}</p></div>` : null}
<p>Credits pay for clips and images. This is the simulated service of <code>cliphook serve</code>: nothing is charged.</p>
<form method="post" action="${TOP_UP_FORM_PATH}">
<div class="field">
<label for="api_key">API key of the account</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" spellcheck="false" required aria-describedby="api_key-hint${error ? ' form-error' : ''}"${error ? unsafeRaw(' autofocus') : ''}>
<p class="hint" id="api_key-hint"><code>cliphook serve</code> prints one at start.</p>
</div>
<div class="field">
<label for="credits">Credits to add</label>
<input type="number" id="credits" name="credits" min="1" max="${MAX_TOP_UP}" step="1" inputmode="numeric" required value="${credits}">
</div>
<button type="submit">Add credits</button>
</form>`,
  });
}
