import type { IncomingMessage, ServerResponse } from 'node:http';
import { LIMITS } from '../contract/limits.js';
import { MAX_TOP_UP, TOP_UP_PAGE_PATH } from '../contract/settings.js';
import type { Command, OperationRun } from '../runner/call.js';
import { html, isSameOrigin, readForm, renderPage, sendPage, unsafeRaw } from './page.js';
import { routeOf } from '../contract/routes.js';
import { PageRequest, unanswered } from './run.js';
import type { Site } from '../core/site.js';

/** Where the top-up page's form posts (the page's path itself takes the keyed JSON `POST`, operation `topUp`). */
export const TOP_UP_FORM_PATH = `${TOP_UP_PAGE_PATH}/form`;

/**
 * The top-up page, what the real service's payment page is to a person: sign in with an API key of the
 * account, choose how many credits to add, and see the new balance. Simulated: nothing is paid. The
 * form posts only from its own page, and adds through the same `topUp` as `POST /settings/top-up`.
 */
export async function showTopUp(res: ServerResponse): Promise<undefined> {
  return sendPage(res, 200, topUpPage({}));
}

/** What the top-up form needs of the service, not the whole `Service`. */
export interface TopUpParts {
  /** Where the page is served: the form is taken from its own origin only. */
  site: Site;
  /**
   * The chain of the settings' routes: the journal, the key (401), its rate limit (429), fault rules, the parse,
   * one unit of work.
   */
  run: OperationRun;
  /** `POST /settings/top-up`'s own command. */
  topUp: Command;
}

/**
 * POST of the page's form (`api_key`, `credits`): `POST /settings/top-up` (operation `topUp`) run through
 * the route's chain, so it is journalled (`POST /settings/top-up/form`, the key's account) and a fault rule
 * on `topUp` acts here too. A low balance is fine, being why one is here (the settings have no 402 floor).
 */
export async function receiveTopUp(parts: TopUpParts, req: IncomingMessage, res: ServerResponse): Promise<undefined> {
  if (!isSameOrigin(req, parts.site.origin)) {
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
  // The key goes as the credential, never in the body the journal keeps; the address's failed sign-ins count too.
  const request = new PageRequest(req, res, `Bearer ${(read.form.get('api_key') ?? '').trim()}`, { credits: amount });
  await parts.run(routeOf('topUp'), parts.topUp, request, (outcome) => {
    const gone = unanswered(req, res, outcome);
    if (gone) return gone;
    if (outcome.kind === 'json') return sendPage(res, 200, addedPage(amount, (outcome.body as { balance: number }).balance));
    if (outcome.kind !== 'problem') return undefined;
    const { status, code, retry_after: wait } = outcome.body;
    const message =
      status === 401 ? 'That API key is unknown or was revoked. Use a key of the account, as shown by cliphook serve.'
      : status === 429 ? `Too many requests with this key, or too many wrong keys from this computer; wait ${wait ?? LIMITS.rateWindowMs / 1000} seconds and send it again.`
      : status === 400 ? `${outcome.body.detail} (${code})`
      : 'The service is busy; nothing was added. Send it again in a few seconds.';
    // A refusal the page has no words for (a fault rule's 5xx, a write that failed) keeps its own status.
    return sendPage(res, status, topUpPage({ error: message, credits }), wait === null ? {} : { 'retry-after': String(wait) });
  });
  return undefined;
}

function addedPage(amount: number, balance: number): string {
  return renderPage({
    title: 'Credits added',
    main: html`<div class="notice success" role="status"><p>Added ${amount.toLocaleString('en')} credits. The balance is now ${balance.toLocaleString('en')} credits.</p></div>
<p>You can close this page and go back to the assistant or your app.</p>`,
  });
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
