// Issue 29 item 19: an assistant built on the MCP SDK 1.x `auth()` (1.32.2) takes its scope from the 401
// challenge (`scope="mcp"`) and never asks for `offline_access`. A client registered for the
// `refresh_token` grant still gets a rotated refresh token, so the SDK refreshes when the hour-long access
// token ends, without the person consenting again; a used refresh token is refused. The library reads the
// time from `Date` (its tokens, the records in the data file): only `Date` is faked, timers stay real.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OAUTH_TTL } from '../../../src/service/assistant/oauth/paths.js';
import type { ServiceApp } from '../../../src/service/http/app.js';
import { answerConsent, serveApp } from './oauth-helpers.js';

interface Started {
  app: ServiceApp;
  origin: string;
  apiKey: string;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) await close();
});

async function start(): Promise<Started> {
  return serveApp(closers);
}

/** The SDK 1.x's `OAuthClientProvider`, kept in memory; "opening" the authorization URL records it. */
class Sdk1Client implements OAuthClientProvider {
  clientInfo: OAuthClientInformationMixed | undefined;
  savedTokens: OAuthTokens | undefined;
  authorizationUrl: URL | undefined;
  /** Every authorization URL the SDK opened: one per time the person was asked. */
  readonly opened: URL[] = [];
  #verifier = '';
  readonly #metadata: OAuthClientMetadata;

  constructor(metadata: Partial<OAuthClientMetadata> = {}) {
    // What the SDK 1.x's own example client registers: both grant types, no scope of its own.
    this.#metadata = { client_name: 'SDK 1.x Assistant', redirect_uris: ['http://127.0.0.1:9/callback'], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...metadata };
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
    this.opened.push(url);
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') this.savedTokens = undefined;
  }
}

/** The SDK 1.x's interactive sign-in: 401 → discovery → registration → consent → code → tokens, then a connected client. */
async function signIn(svc: Started, oauth: Sdk1Client): Promise<{ client: Client; page: string }> {
  const first = new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { authProvider: oauth });
  await expect(new Client({ name: 'sdk1-assistant', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const { landed, page } = await answerConsent(oauth.authorizationUrl!, { apiKey: svc.apiKey });
  expect(landed.searchParams.get('error'), landed.search).toBeNull();
  await first.finishAuth(landed.searchParams.get('code')!);
  const client = new Client({ name: 'sdk1-assistant', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { authProvider: oauth }));
  return { client, page };
}

async function balance(client: Client): Promise<unknown> {
  const result = (await client.callTool({ name: 'get_account', arguments: {} })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
  expect(result.isError ?? false).toBe(false);
  return result.structuredContent?.credits ?? result.structuredContent;
}

const refreshWith = (svc: Started, oauth: Sdk1Client, refreshToken: string) =>
  fetch(`${svc.origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: oauth.clientInfo!.client_id }).toString(),
  });

describe('refresh tokens for an assistant on the MCP SDK 1.x auth()', () => {
  it('refreshes past the access token lifetime without a new consent, rotating the refresh token', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const svc = await start();
    const oauth = new Sdk1Client();
    const { client, page } = await signIn(svc, oauth);
    // The person is told the assistant stays connected.
    expect(page).toContain('stays connected, without asking you again, until you disconnect it in the account settings or it goes 30 days unused');
    // The SDK asked only for what the challenge named, and was still given a refresh token.
    expect(oauth.opened).toHaveLength(1);
    expect(oauth.opened[0]!.searchParams.get('scope')).toBe('mcp');
    const first = oauth.savedTokens!;
    expect(first.refresh_token).toEqual(expect.any(String));
    expect(first.scope).toBe('mcp');
    await balance(client);

    vi.setSystemTime(Date.now() + (OAUTH_TTL.accessToken + 60) * 1000);
    // The SDK meets the 401 of the expired token, refreshes with its refresh token, and sends again.
    await balance(client);
    expect(oauth.opened).toHaveLength(1);
    const second = oauth.savedTokens!;
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).toEqual(expect.any(String));
    expect(second.refresh_token).not.toBe(first.refresh_token);

    // The connection outlives the browser's session at the consent page (14 days): 20 days on, it refreshes again.
    vi.setSystemTime(Date.now() + 20 * 86_400_000);
    await balance(client);
    expect(oauth.opened).toHaveLength(1);
    const third = oauth.savedTokens!;
    expect(third.refresh_token).not.toBe(second.refresh_token);
    await client.close();

    // The rotated-away token is refused, and its reuse ends the grant (RFC 9700 §4.14.2): the latest token too.
    const reused = await refreshWith(svc, oauth, first.refresh_token!);
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: string }).error).toBe('invalid_grant');
    const latest = await refreshWith(svc, oauth, third.refresh_token!);
    expect(latest.status).toBe(400);
  });

  it('survives tool calls sent in parallel past the hour, each refreshing with the same refresh token', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const svc = await start();
    const oauth = new Sdk1Client();
    const { client } = await signIn(svc, oauth);
    await balance(client);
    vi.setSystemTime(Date.now() + (OAUTH_TTL.accessToken + 60) * 1000);
    // Each call meets its own 401 and its own auth(): the SDK 1.x does not share one refresh between them.
    await Promise.all([balance(client), balance(client), balance(client)]);
    expect(oauth.opened).toHaveLength(1);
    vi.setSystemTime(Date.now() + (OAUTH_TTL.accessToken + 60) * 1000);
    await balance(client);
    expect(oauth.opened).toHaveLength(1);
    await client.close();
  });

  it('takes a rotated-away refresh token again within the grace period, and revokes the grant when it comes back later', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const svc = await start();
    const oauth = new Sdk1Client();
    const { client } = await signIn(svc, oauth);
    await client.close();
    const first = oauth.savedTokens!.refresh_token!;
    const rotated = (await (await refreshWith(svc, oauth, first)).json()) as { refresh_token: string; access_token: string };
    expect(rotated.refresh_token).not.toBe(first);
    // A second request that set out with the same token (a parallel call, a retry of a lost answer) is answered too.
    vi.setSystemTime(Date.now() + (OAUTH_TTL.rotatedRefreshGrace - 1) * 1000);
    const twin = await refreshWith(svc, oauth, first);
    expect(twin.status).toBe(200);
    const twinTokens = (await twin.json()) as { refresh_token: string };
    // Past the grace period the old token is a copy: refused, and the grant is revoked (every branch of it).
    vi.setSystemTime(Date.now() + 2_000);
    const late = await refreshWith(svc, oauth, first);
    expect(late.status).toBe(400);
    expect(((await late.json()) as { error: string }).error).toBe('invalid_grant');
    for (const token of [rotated.refresh_token, twinTokens.refresh_token]) expect((await refreshWith(svc, oauth, token)).status).toBe(400);
  });

  it('shows a connection whose grant reuse detection revoked as disconnected in /settings/assistants (issue 29 follow-up item 3)', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const svc = await start();
    const oauth = new Sdk1Client();
    const { client } = await signIn(svc, oauth);
    await client.close();
    const assistants = async () => {
      const answer = await fetch(`${svc.origin}/settings/assistants`, { headers: { authorization: `Bearer ${svc.apiKey}` } });
      expect(answer.status).toBe(200);
      return ((await answer.json()) as { data: Array<{ id: string; kind: string; disconnected_at: string | null }> }).data.filter((row) => row.kind === 'oauth');
    };
    const [live] = await assistants();
    expect(live).toMatchObject({ disconnected_at: null });
    const first = oauth.savedTokens!.refresh_token!;
    expect((await refreshWith(svc, oauth, first)).status).toBe(200);
    vi.setSystemTime(Date.now() + (OAUTH_TTL.rotatedRefreshGrace + 1) * 1000);
    expect((await refreshWith(svc, oauth, first)).status).toBe(400);
    const after = await assistants();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: live!.id, disconnected_at: expect.any(String) });
    // As after a disconnect in the settings: it cannot be disconnected again, and a new sign-in is a new connection.
    const again = await fetch(`${svc.origin}/settings/assistants/${live!.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${svc.apiKey}` } });
    expect(again.status).toBe(404);
  });

  it('shows a connection whose refresh token the assistant revoked (RFC 7009) as disconnected too', async () => {
    const svc = await start();
    const oauth = new Sdk1Client();
    const { client } = await signIn(svc, oauth);
    await client.close();
    const revoked = await fetch(`${svc.origin}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: oauth.savedTokens!.refresh_token!, token_type_hint: 'refresh_token', client_id: oauth.clientInfo!.client_id }).toString(),
    });
    expect(revoked.status).toBe(200);
    const list = (await (await fetch(`${svc.origin}/settings/assistants`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).json()) as { data: Array<{ kind: string; disconnected_at: string | null }> };
    expect(list.data.filter((row) => row.kind === 'oauth')).toEqual([expect.objectContaining({ disconnected_at: expect.any(String) })]);
  });

  it('keeps a connection in use for a year after the approval (the grant), then asks the person again', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const svc = await start();
    const oauth = new Sdk1Client();
    const { client } = await signIn(svc, oauth);
    const approved = Date.now();
    // A refresh every 25 days (each refresh token lasts 30) keeps it going…
    while (Date.now() + 25 * 86_400_000 < approved + OAUTH_TTL.grant * 1000) {
      vi.setSystemTime(Date.now() + 25 * 86_400_000);
      await balance(client);
    }
    expect(oauth.opened).toHaveLength(1);
    // …until the grant ends: the refresh is refused and the SDK opens the consent page again.
    vi.setSystemTime(approved + OAUTH_TTL.grant * 1000 + 60_000);
    await expect(client.callTool({ name: 'get_account', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
    expect(oauth.opened).toHaveLength(2);
    await client.close();
  });

  it('gives no refresh token to a client registered for the authorization code grant only', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const svc = await start();
    const oauth = new Sdk1Client({ grant_types: ['authorization_code'] });
    const { client, page } = await signIn(svc, oauth);
    expect(page).not.toContain('stays connected');
    expect(oauth.clientInfo).toMatchObject({ grant_types: ['authorization_code'] });
    expect(oauth.savedTokens!.refresh_token).toBeUndefined();
    await balance(client);
    // Past the hour the SDK has nothing to refresh with: the person is asked again.
    vi.setSystemTime(Date.now() + (OAUTH_TTL.accessToken + 60) * 1000);
    await expect(client.callTool({ name: 'get_account', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
    expect(oauth.opened).toHaveLength(2);
    await client.close();
  });
});
