// The person's side of the OAuth sign-in without a browser: follows the authorization URL to the consent
// page, sends its form with the cookies a browser would keep, and follows the redirects back to the
// assistant's redirect URI. The browser test (consent-page.test.ts) drives the same page in Chromium.
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthClientProvider, OAuthDiscoveryState, OAuthTokens } from '@modelcontextprotocol/client';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServiceApp, type ServiceApp } from '../../../src/service/http/app.js';
import { SimulatedClock } from '../../../src/service/index.js';

export class CookieJar {
  readonly #cookies = new Map<string, string>();

  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.#cookies.size > 0) headers.set('cookie', [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
    return res;
  }
}

export interface Approval {
  apiKey: string;
  dailyLimit?: string;
  decision?: 'approve' | 'deny';
}

/** Opens the authorization URL, answers the consent page, and returns where the person's browser ends: the redirect URI with `code` (or `error`). */
export async function answerConsent(authorizationUrl: URL, { apiKey, dailyLimit = '', decision = 'approve' }: Approval, jar = new CookieJar()): Promise<{ page: string; landed: URL }> {
  const start = await jar.fetch(authorizationUrl);
  if (start.status !== 303 && start.status !== 302) throw new Error(`authorization answered ${start.status}: ${await start.text()}`);
  const consentUrl = new URL(start.headers.get('location')!, authorizationUrl);
  const pageRes = await jar.fetch(consentUrl);
  const page = await pageRes.text();
  if (pageRes.status !== 200) throw new Error(`consent page answered ${pageRes.status}: ${page}`);
  const form = new URLSearchParams({ api_key: apiKey, daily_limit: dailyLimit, decision });
  let res = await jar.fetch(consentUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: consentUrl.origin }, body: form.toString() });
  let at = consentUrl;
  for (let hops = 0; hops < 5 && res.status >= 300 && res.status < 400; hops++) {
    at = new URL(res.headers.get('location')!, at);
    if (at.origin !== consentUrl.origin) return { page, landed: at };
    res = await jar.fetch(at);
  }
  throw new Error(`the sign-in did not return to the client: ${res.status} ${await res.text()}`);
}

/** An OAuthClientProvider for the SDK's own client, kept in memory, that "opens" the authorization URL by recording it. */
export class MemoryOAuthClient implements OAuthClientProvider {
  clientInfo: OAuthClientInformationMixed | undefined;
  savedTokens: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  discovery: OAuthDiscoveryState | undefined;
  readonly clientMetadataUrl: string | undefined;
  readonly #metadata: OAuthClientMetadata;

  constructor(metadata: Partial<OAuthClientMetadata> = {}, { clientMetadataUrl }: { clientMetadataUrl?: string } = {}) {
    this.#metadata = { client_name: 'Test Assistant', redirect_uris: ['http://127.0.0.1:9/callback'], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...metadata };
    this.clientMetadataUrl = clientMetadataUrl;
  }
  get redirectUrl(): string {
    return this.#metadata.redirect_uris[0]!;
  }
  get clientMetadata(): OAuthClientMetadata {
    return this.#metadata;
  }
  clientInformation() {
    return this.clientInfo;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.clientInfo = info;
  }
  tokens() {
    return this.savedTokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.savedTokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

/** A service on 127.0.0.1:0 (a frozen clock unless `options` brings one), its origin set for the sign-in; closed by `closers`. */
export async function serveApp(closers: Array<() => Promise<void>>, options: Parameters<typeof createServiceApp>[0] = {}): Promise<{ app: ServiceApp; origin: string; apiKey: string }> {
  const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), ...options });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.service.origin = origin;
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await app.close();
  });
  return { app, origin, apiKey: app.service.first().apiKey };
}
