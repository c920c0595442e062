import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { html, PAGE_HEADERS, renderPage } from '../../pages/page.js';
import type { ServiceStore } from '../../core/store.js';
import { guardedFetch } from '../../core/outbound-fetch.js';
import { RateLimiter } from '../../core/gate.js';
import { StoreAdapterFactory, type OAuthTables } from './adapter.js';
import { MCP_SCOPE, OAUTH_PATHS, OAUTH_TTL } from './paths.js';

/** The scopes this server knows: `mcp` (the endpoint's one), `offline_access` (a refresh token), `openid` (an ID token). */
export const KNOWN_SCOPES: ReadonlySet<string> = new Set(['openid', 'offline_access', MCP_SCOPE]);

/** Dynamic registrations one address may make in a minute. */
export const REGISTRATIONS_PER_MINUTE = 20;
/** Sign-ins (GET /oauth/authorize) one address may start in a minute: each holds memory until it ends. */
export const SIGN_INS_PER_MINUTE = 60;

export interface OAuthServerOptions {
  store: ServiceStore<OAuthTables>;
  /** The service's origin: the issuer. */
  issuer: string;
  /** The protected resource tokens are bound to: `{origin}/mcp`. */
  resource: string;
  /** Whether an account id names an account of the service. */
  accountExists(accountId: string): boolean;
  /** Whether a registered client is used by a live connection (never evicted to make room). */
  clientInUse(clientId: string): boolean;
  /** Whether an account has a live connection with a client: its own approval lets authorization errors go back to the client. */
  approvedBy(accountId: string, clientId: string): boolean;
  /** Called once the library revoked a whole grant itself (a refresh token used twice, RFC 9700 §4.14.2; a revocation): its connection ends. */
  grantRevoked?: ((grantId: string) => Promise<void>) | undefined;
  /**
   * Replaces the connection of the server's outbound fetches (client ID metadata documents, `jwks_uri`);
   * the URL checks of `guardedFetch` still run first. @default https behind the webhooks' address guard
   */
  fetch?: typeof fetch | undefined;
  warn(message: string): void;
}

/** The persisted keys of the authorization server: a signing key (for ID tokens, should a client ask for `openid`) and cookie keys. */
interface ServerKeys {
  jwk: Record<string, unknown>;
  cookieKeys: string[];
}

function serverKeys(store: ServiceStore<OAuthTables>): ServerKeys {
  const table = store.table('oauth');
  const found = table.get('Internal:keys');
  if (found) return found.payload as unknown as ServerKeys;
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('base64url'), alg: 'ES256', use: 'sig' };
  const keys: ServerKeys = { jwk, cookieKeys: [randomBytes(32).toString('base64url')] };
  table.put({ id: 'Internal:keys', payload: keys as never, expiresAt: null });
  return keys;
}

/**
 * The authorization server of the assistant endpoint, on oidc-provider (OpenID Certified, maintained):
 * authorization code with PKCE (S256 only, required for every client), dynamic client registration
 * (RFC 7591), client ID metadata documents, resource indicators (RFC 8707) so every access token is
 * bound to `{origin}/mcp`, refresh tokens with rotation, and revocation. Its records live in the
 * service's data file (`StoreAdapterFactory`). The library is loaded on first use (`createOAuthServer`), so a
 * service whose assistants use only API keys never loads it.
 */
export async function createOAuthServer(options: OAuthServerOptions): Promise<OAuthServer> {
  const library = await import('oidc-provider');
  return new OAuthServer(options, library);
}

export class OAuthServer {
  readonly provider: Provider;
  readonly adapters: StoreAdapterFactory;
  readonly issuer: string;
  readonly resource: string;
  readonly #callback: (req: IncomingMessage, res: ServerResponse) => void;
  readonly #registrations: RateLimiter;
  readonly #signIns: RateLimiter;

  /** @internal Use `createOAuthServer`. */
  constructor(options: OAuthServerOptions, { default: ProviderClass, errors }: typeof import('oidc-provider')) {
    const { store, issuer, resource, accountExists, warn } = options;
    this.issuer = issuer;
    this.resource = resource;
    this.adapters = new StoreAdapterFactory(store, { clientInUse: options.clientInUse, grantRevoked: options.grantRevoked });
    // Wall-clock windows, as the library's own lifetimes: a frozen test clock must not close them for good.
    this.#registrations = new RateLimiter({ now: Date.now, limit: REGISTRATIONS_PER_MINUTE });
    this.#signIns = new RateLimiter({ now: Date.now, limit: SIGN_INS_PER_MINUTE });
    const keys = serverKeys(store);
    const configuration: Configuration = {
      adapter: this.adapters.adapter as unknown as Configuration['adapter'],
      jwks: { keys: [keys.jwk as never] },
      cookies: { keys: keys.cookieKeys },
      routes: {
        authorization: OAUTH_PATHS.authorization,
        token: OAUTH_PATHS.token,
        registration: OAUTH_PATHS.registration,
        revocation: OAUTH_PATHS.revocation,
        jwks: OAUTH_PATHS.jwks,
      },
      scopes: [...KNOWN_SCOPES],
      // The library calls a parameter's validator with its context, before any interaction: the scope is settled there.
      extraParams: { scope: async (ctx: KoaContextWithOIDC) => settleScope(ctx, errors) },
      claims: { openid: ['sub'] },
      // The authorization code flow only: no implicit or hybrid response types.
      responseTypes: ['code'],
      clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', id_token_signed_response_alg: 'ES256' },
      pkce: { required: () => true },
      // OAuth 2.1: redirect URIs are https, a loopback address over http, or a native app's own scheme.
      extraClientMetadata: {
        properties: ['redirect_uris'],
        validator: (_ctx, key, value) => {
          if (key !== 'redirect_uris' || !Array.isArray(value)) return;
          const insecure = (value as unknown[]).find((uri) => !isAllowedRedirect(String(uri)));
          if (insecure === undefined) return;
          const error = new errors.InvalidRedirectUri();
          error.error_description = `redirect_uris must use https, http on a loopback address (127.0.0.1, [::1], localhost), or a native app's own scheme: ${String(insecure)}`;
          throw error;
        },
      },
      // Browser-based assistants may call the token endpoint from the origins of their own redirect URIs.
      clientBasedCORS: (_ctx, origin, client) => (client.redirectUris ?? []).some((uri) => URL.parse(uri)?.origin === origin),
      findAccount: async (_ctx, sub) => (accountExists(sub) ? { accountId: sub, claims: async () => ({ sub }) } : undefined),
      interactions: { url: (_ctx, interaction) => `${OAUTH_PATHS.consent}/${interaction.uid}` },
      // A client registered for the refresh_token grant gets a refresh token whether or not it
      // asked for `offline_access` (the MCP SDK 1.x never does), so the person is not asked again every hour.
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      // Such a grant lasts as its connection does (until disconnected, or 30 days unused), not as the
      // browser's session on the consent page, which the person never sees nor ends (the library's default binds it).
      expiresWithSession: async (ctx, code) => !code.scopes.has('offline_access') && !ctx.oidc.client?.grantTypeAllowed('refresh_token'),
      // Public clients: each use gives a new refresh token, and a used one sent again revokes the grant (RFC 9700 §4.14.2).
      rotateRefreshToken: true,
      ttl: {
        AccessToken: OAUTH_TTL.accessToken,
        AuthorizationCode: OAUTH_TTL.authorizationCode,
        Interaction: OAUTH_TTL.interaction,
        RefreshToken: OAUTH_TTL.refreshToken,
        Session: OAUTH_TTL.session,
        Grant: OAUTH_TTL.grant,
        IdToken: 3_600,
      },
      features: {
        devInteractions: { enabled: false },
        // No registration access tokens: client management (RFC 7592) is off, so they would only pile up.
        registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
        revocation: { enabled: true },
        userinfo: { enabled: false },
        // Off: /mcp checks bearer tokens only, so no sender-constrained (DPoP) tokens, and nothing it does not need.
        dPoP: { enabled: false },
        pushedAuthorizationRequests: { enabled: false },
        rpInitiatedLogout: { enabled: false },
        clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } as never,
        resourceIndicators: {
          enabled: true,
          defaultResource: async () => resource,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: KoaContextWithOIDC, indicator: string) => {
            if (indicator !== resource) throw new errors.InvalidTarget(`This authorization server issues tokens only for ${resource}.`);
            return { scope: MCP_SCOPE, audience: resource, accessTokenFormat: 'opaque', accessTokenTTL: OAUTH_TTL.accessToken };
          },
        },
      },
      renderError: async (ctx, out) => {
        for (const [name, value] of Object.entries(PAGE_HEADERS)) ctx.set(name, value);
        ctx.type = 'html';
        ctx.body = errorPage(out as unknown as Record<string, string>);
      },
      // Every fetch the library makes (a stranger's `client_id=https://…` among them) refuses private and
      // loopback addresses before connecting; the library's own check runs only after connect.
      fetch: guardedFetch({ transport: options.fetch }) as never,
    };
    this.provider = new ProviderClass(issuer, configuration);
    // The library builds the URLs it publishes from the request (`handle` sets what it reads): trusted here.
    this.provider.proxy = true;
    this.provider.on('server_error', (_ctx, error) => warn(`oauth: ${(error as Error).message}`));
    this.#noBlindRedirects(options.approvedBy);
    this.#callback = this.provider.callback() as unknown as (req: IncomingMessage, res: ServerResponse) => void;
  }

  /**
   * Hands a request to the library. RFC 8414's path gets the same document as OpenID discovery, and
   * registrations and sign-in starts are limited per address (paths compared as the library's router
   * does: any case, a trailing slash ignored).
   */
  handle(req: IncomingMessage, res: ServerResponse): void {
    // Every URL the library publishes (the metadata's endpoints, the resume redirect) is
    // built from the request's host and scheme; they are the issuer's, never what a client's headers say.
    const issuer = new URL(this.issuer);
    for (const name of ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port']) delete req.headers[name];
    req.headers.host = issuer.host;
    req.headers['x-forwarded-host'] = issuer.host;
    req.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
    const [path = '/', query] = (req.url ?? '/').split('?', 2);
    const route = path.toLowerCase().replace(/\/+$/, '');
    if (route === OAUTH_PATHS.serverMetadata) req.url = `${OAUTH_PATHS.openidConfiguration}${query === undefined ? '' : `?${query}`}`;
    const limiter = route === OAUTH_PATHS.registration && req.method === 'POST' ? this.#registrations : route === OAUTH_PATHS.authorization ? this.#signIns : null;
    if (limiter) {
      const decision = limiter.check(req.socket.remoteAddress ?? 'unknown');
      if (!decision.allowed) {
        req.resume();
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(decision.retryAfter), 'cache-control': 'no-store' });
        res.end(JSON.stringify({ error: 'temporarily_unavailable', error_description: `At most ${decision.limit} of these requests a minute from one address.` }));
        return;
      }
    }
    this.#callback(req, res);
  }

  /**
   * No blind redirects (RFC 9700, section 4.11.2): registration is open, so anyone can register a
   * redirect URI of their own. An authorization error goes back to the client (by any response mode) only
   * when a person answered the consent page in this sign-in, or when the browser's session is of an
   * account that has approved this client; any other is shown on a page of the service. Decided inside the
   * library, on its own routes (`authorization` and `resume`), whatever path spelling reached them.
   */
  #noBlindRedirects(isApproved: (accountId: string, clientId: string) => boolean): void {
    const failed = new WeakMap<object, Record<string, string>>();
    const remember = (ctx: KoaContextWithOIDC, error: unknown) => {
      const { error: code = 'server_error', error_description: description = '' } = error as { error?: string; error_description?: string };
      failed.set(ctx, { error: code, error_description: description });
    };
    this.provider.on('authorization.error', remember);
    this.provider.on('server_error', remember);
    this.provider.use(async (ctx, next) => {
      await next();
      const out = failed.get(ctx);
      const oidc = (ctx as KoaContextWithOIDC).oidc as KoaContextWithOIDC['oidc'] | undefined;
      if (!out || !oidc || (oidc.route !== 'authorization' && oidc.route !== 'resume')) return;
      const answered = oidc.route === 'resume' && Boolean((oidc.entities.Interaction as { result?: unknown } | undefined)?.result);
      const accountId = oidc.session?.accountId;
      const clientId = oidc.client?.clientId;
      if (answered || (accountId && clientId && isApproved(accountId, clientId))) return;
      ctx.status = ctx.status >= 400 && ctx.status < 500 ? ctx.status : 400;
      ctx.remove('location');
      for (const [name, value] of Object.entries(PAGE_HEADERS)) ctx.set(name, value);
      ctx.type = 'html';
      ctx.body = errorPage(out);
    });
  }
}

/**
 * The scope of an authorization request, settled before the consent page: an unknown
 * scope is `invalid_scope`; a request that names no scope of the endpoint (none at all, as OAuth 2.1
 * allows, or only `offline_access` or `openid`) gets the default, `mcp`. The library drops
 * `offline_access` from a request without `prompt=consent` (OpenID Connect's rule); here such a request
 * keeps it and is given the consent prompt instead, so the person approves the refresh token explicitly.
 */
function settleScope(ctx: KoaContextWithOIDC, errors: typeof import('oidc-provider').errors): void {
  const params = ctx.oidc.params as Record<string, unknown>;
  const sent = ((ctx.method === 'POST' ? (ctx.oidc.body as Record<string, unknown> | undefined) : ctx.query) ?? {}) as Record<string, unknown>;
  const raw = typeof sent.scope === 'string' ? sent.scope.split(' ').filter(Boolean) : [];
  const unknown = raw.filter((scope) => !KNOWN_SCOPES.has(scope));
  if (unknown.length > 0) throw new errors.InvalidScope(`This server grants only ${[...KNOWN_SCOPES].join(', ')}; unknown: ${unknown.join(' ')}.`, unknown.join(' '));
  const asked = new Set(String(params.scope ?? '').split(' ').filter(Boolean));
  if (raw.includes('offline_access') && !asked.has('offline_access') && params.prompt === undefined && ctx.oidc.client?.grantTypeAllowed('refresh_token')) {
    asked.add('offline_access');
    params.prompt = 'consent';
  }
  asked.add(MCP_SCOPE);
  params.scope = [...asked].join(' ');
}

/** Whether a redirect URI is one OAuth 2.1 allows: https, http to a loopback host, or a private-use scheme (a native app's own). */
export function isAllowedRedirect(uri: string): boolean {
  const url = URL.parse(uri);
  if (!url) return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol === 'http:') return url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost';
  // A native app's scheme (`com.example.app:`, `cursor:`); the library itself refuses javascript:, data: and the like.
  return /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) && !['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'ws:', 'wss:', 'ftp:'].includes(url.protocol);
}

/** The page the library shows for an error it cannot send back to the client (a bad redirect_uri, an unknown client). */
function errorPage(out: Record<string, string>): string {
  const rows = Object.entries(out).map(([name, value]) => html`<dt>${name}</dt><dd>${String(value)}</dd>`);
  return renderPage({
    title: 'The assistant could not be signed in',
    main: html`<p>The request was refused before it reached the account holder. Give these details to whoever set up the assistant.</p><dl>${rows}</dl>`,
  });
}
