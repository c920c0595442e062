import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServiceError } from '../../contract/problems.js';
import { ASSISTANT_TEXT } from '../../contract/assistant.js';
import { cspWithFormTarget, html, isSameOrigin, readForm, renderPage, sendPage, unsafeRaw, type SafeHtml } from '../../pages/page.js';
import { DAILY_LIMITS, isDailyLimit, type AssistantConnections } from '../connections.js';
import { MCP_SCOPE, OAUTH_TTL } from './paths.js';
import type { OAuthServer } from './provider.js';
import type { SignInParts } from '../parts.js';

/** The scopes an approval grants when the assistant asks for them. */
const GRANTABLE_SCOPES = new Set(['openid', 'offline_access', MCP_SCOPE]);

/** Wrong API keys one sign-in may try before it is ended (access_denied). */
export const MAX_SIGN_IN_ATTEMPTS = 5;

interface Shown {
  uid: string;
  clientId: string;
  clientName: string | null;
  /** The redirect URI the library checked against the client's registration. */
  redirectUri: string;
  redirectHost: string;
  resource: string;
  /** Whether the client is registered for the refresh_token grant, so it will stay connected without asking again. */
  staysConnected: boolean;
}

/**
 * The authorization page (`/oauth/consent/<uid>`): the account holder signs in with one of the account's
 * API keys, sees which assistant asks and where the answer goes, sets the assistant's daily credit limit,
 * and approves or declines. Approval makes a grant of the `mcp` scope on `{origin}/mcp` and records the
 * connection with its limit; the library then sends the code to the assistant's redirect URI.
 */
export class ConsentPage {
  readonly #parts: Pick<SignInParts, 'origin' | 'accounts' | 'gate'>;
  readonly #oauth: () => Promise<OAuthServer>;
  readonly #connections: AssistantConnections;

  constructor(parts: Pick<SignInParts, 'origin' | 'accounts' | 'gate'>, oauth: () => Promise<OAuthServer>, connections: AssistantConnections) {
    this.#parts = parts;
    this.#oauth = oauth;
    this.#connections = connections;
  }

  /** GET: the page, or a page saying the sign-in is over (no cookie, expired, already answered). */
  async show(req: IncomingMessage, res: ServerResponse): Promise<undefined> {
    const shown = await this.#details(req, res);
    if (!shown) return this.#ended(res);
    (await this.#oauth()).adapters.markOpened(shown.uid);
    return this.#send(res, 200, shown, {});
  }

  /** POST: approve (with the API key and an optional limit) or decline. */
  async submit(req: IncomingMessage, res: ServerResponse): Promise<undefined> {
    if (!isSameOrigin(req, this.#parts.origin)) {
      req.resume();
      return sendPage(res, 403, renderPage({ title: 'Not allowed', main: html`<p>This form can only be sent from its own page.</p>` }));
    }
    const read = await readForm(req);
    if ('error' in read) return sendPage(res, read.error === 'too_large' ? 413 : 400, renderPage({ title: 'The form could not be read', main: html`<p>Go back and send it again.</p>` }));
    const { form } = read;
    const shown = await this.#details(req, res);
    if (!shown) return this.#ended(res);
    const { provider, adapters } = await this.#oauth();
    if (form.get('decision') !== 'approve') {
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The account holder declined.' }, { mergeWithLastSubmission: false });
      return undefined;
    }
    const rawLimit = (form.get('daily_limit') ?? '').trim();
    const limit = rawLimit === '' ? null : Number(rawLimit);
    if (limit !== null && !isDailyLimit(limit)) {
      return this.#send(res, 400, shown, { error: `The daily limit is a whole number of credits from 0 to ${DAILY_LIMITS.max.toLocaleString('en')}, or empty for the default.`, limit: rawLimit });
    }
    // Wrong keys count per sign-in (below) and per address, as on /v1, so guessing is bounded; a right key is
    // never refused by the address's count, so a stranger's guesses cannot lock its holder out.
    const address = req.socket.remoteAddress;
    const who = this.#parts.accounts.authenticate(`Bearer ${(form.get('api_key') ?? '').trim()}`);
    if (typeof who === 'string') {
      try {
        this.#parts.gate.guessed(address);
      } catch (error) {
        const wait = (error as ServiceError).retryAfter ?? 60;
        return this.#send(res, 429, shown, { error: `Too many wrong API keys from this computer; wait ${wait} seconds and try again.`, limit: rawLimit }, { 'retry-after': String(wait) });
      }
      // The sign-in ends at the fifth; its answer is recorded, so later posts find it over (see #details).
      if (adapters.recordFailure(shown.uid) >= MAX_SIGN_IN_ATTEMPTS) {
        await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'Too many wrong API keys.' }, { mergeWithLastSubmission: false });
        return undefined;
      }
      return this.#send(res, 401, shown, { error: 'That API key is unknown or was revoked. Use a key of the account, as shown by cliphook serve or in the account settings.', limit: rawLimit });
    }
    const details = await provider.interactionDetails(req, res);
    const accountId = String(who.account.id);
    const grant = new provider.Grant({ accountId, clientId: shown.clientId });
    grant.addResourceScope(shown.resource, MCP_SCOPE);
    // `mcp` is both the resource's scope and one the server lists, so a request naming it is granted it twice over.
    const asked = String(details.params.scope ?? '').split(' ').filter((scope) => GRANTABLE_SCOPES.has(scope));
    if (asked.length > 0) grant.addOIDCScope(asked.join(' '));
    const grantId = await grant.save();
    await this.#connections.connect(who.account, { grantId, clientId: shown.clientId, name: shown.clientName ?? shown.clientId, dailyLimit: limit });
    await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
    return undefined;
  }

  async #details(req: IncomingMessage, res: ServerResponse): Promise<Shown | null> {
    const oauth = await this.#oauth();
    let details;
    try {
      details = await oauth.provider.interactionDetails(req, res);
    } catch {
      return null;
    }
    // Answered already (approved, declined, or ended by wrong keys) but the redirect not yet followed: a
    // sign-in is answered once, so neither the page nor another post may change that answer.
    if (details.result) return null;
    const uid = details.uid;
    const clientId = String(details.params.client_id ?? '');
    const client = await oauth.provider.Client.find(clientId).catch(() => undefined);
    if (!client) return null;
    const redirect = URL.parse(String(details.params.redirect_uri ?? ''));
    return {
      uid, clientId, clientName: client.clientName ?? null, redirectUri: String(details.params.redirect_uri ?? ''), redirectHost: redirect ? redirect.host || redirect.protocol : 'unknown',
      resource: oauth.resource, staysConnected: client.grantTypeAllowed('refresh_token'),
    };
  }

  #ended(res: ServerResponse): undefined {
    return sendPage(
      res,
      400,
      renderPage({ title: 'This sign-in is over', main: html`<p>It was already answered, or it expired, or it was opened in another browser. Start again from the assistant.</p>` }),
    );
  }

  /** The page, whose form may end at the assistant's redirect URI (browsers check `form-action` on each redirect). */
  #send(res: ServerResponse, status: number, shown: Shown, state: { error?: string; limit?: string }, headers: Record<string, string> = {}): undefined {
    return sendPage(res, status, this.#page(shown, state), { ...headers, 'content-security-policy': cspWithFormTarget(shown.redirectUri) });
  }

  #page(shown: Shown, { error, limit = '' }: { error?: string; limit?: string }): string {
    const action = `${this.#parts.origin}/oauth/consent/${encodeURIComponent(shown.uid)}`;
    const name = shown.clientName ?? 'An assistant without a name';
    const notice: SafeHtml | null = error ? html`<div class="notice error" role="alert" id="form-error"><p>${error}</p></div>` : null;
    // A refresh_token client stays connected without asking for offline_access (provider.ts); the person is told here.
    const lasting: SafeHtml | null = shown.staysConnected
      ? html`<p>It stays connected, without asking you again, until you disconnect it in the account settings or it goes ${OAUTH_TTL.refreshToken / 86_400} days unused.</p>`
      : null;
    return renderPage({
      title: 'Connect an assistant',
      main: html`${notice}
<p><strong>${name}</strong> asks to use this cliphook account: to make clips and images, which spend credits, and to read the account's clips, images and balance.</p>
${lasting}
<dl class="facts">
<dt>Client</dt><dd><code>${shown.clientId}</code></dd>
<dt>Answer goes to</dt><dd><code>${shown.redirectHost}</code></dd>
<dt>Access to</dt><dd><code>${shown.resource}</code></dd>
</dl>
<form method="post" action="${action}">
<div class="field">
<label for="api_key">API key of the account</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" spellcheck="false" required aria-describedby="api_key-hint${error ? ' form-error' : ''}"${error ? unsafeRaw(' autofocus') : ''}>
<p class="hint" id="api_key-hint">It signs you in here and is not given to the assistant. <code>cliphook serve</code> prints one at start.</p>
</div>
<div class="field">
<label for="daily_limit">Daily credit limit for this assistant</label>
<input type="number" id="daily_limit" name="daily_limit" min="0" max="${DAILY_LIMITS.max}" step="1" inputmode="numeric" value="${limit}" aria-describedby="daily_limit-hint">
<p class="hint" id="daily_limit-hint">Credits it may spend in any ${ASSISTANT_TEXT.dailyWindow}. Leave empty for the default: ${DAILY_LIMITS.default} a day, or ${DAILY_LIMITS.beforeTopUp} until the account's first top-up. You can change it or disconnect the assistant later in the account settings.</p>
</div>
<div class="actions">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary" formnovalidate>Decline</button>
</div>
</form>`,
    });
  }
}
