// OAuth 2.1 sign-in on the assistant endpoint, end to end with the SDK's own client: discovery (RFC 9728
// and 8414), dynamic registration (RFC 7591) and client ID metadata documents, the consent page, PKCE
// (S256 only), tokens bound to {origin}/mcp, the daily limit set on the page, disconnect, and restarts.
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client, discoverAuthorizationServerMetadata, discoverOAuthProtectedResourceMetadata, exchangeAuthorization, registerClient, startAuthorization,
  StreamableHTTPClientTransport, UnauthorizedError,
} from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, type AppOptions, type ServiceApp } from '../../../src/service/http/app.js';
import { assistantEndpoint } from '../../../src/service/http/app-internals.js';
import { answerConsent, CookieJar, MemoryOAuthClient } from './oauth-helpers.js';

interface Running {
  app: ServiceApp;
  origin: string;
  apiKey: string;
  close(): Promise<void>;
}

const running: Running[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((one) => one.close()));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function start(options: AppOptions = {}): Promise<Running> {
  const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), ...options });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.service.origin = origin;
  const one: Running = {
    app, origin, apiKey: app.service.first().apiKey,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
    },
  };
  running.push(one);
  return one;
}

async function stop(one: Running): Promise<void> {
  running.splice(running.indexOf(one), 1);
  await one.close();
}

/** The SDK client's whole interactive flow: 401 → discovery → registration → consent → code → token, then a connected client. */
async function signIn(svc: Running, oauth = new MemoryOAuthClient(), approval: { dailyLimit?: string } = {}) {
  const first = new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { authProvider: oauth });
  await expect(new Client({ name: 'assistant', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const { landed, page } = await answerConsent(oauth.authorizationUrl!, { apiKey: svc.apiKey, ...approval });
  expect(landed.searchParams.get('error')).toBeNull();
  await first.finishAuth(landed.searchParams);
  return { client: await connected(svc, oauth), oauth, page };
}

async function connected(svc: Running, oauth: MemoryOAuthClient): Promise<Client> {
  const client = new Client({ name: 'assistant', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { authProvider: oauth }));
  return client;
}

async function tool(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text?: string }> };
  return { isError: result.isError === true, data: result.structuredContent ?? {}, error: result.isError ? (JSON.parse(result.content[0]!.text!) as { error: string }) : null };
}

const mcpWith = (svc: Running, token: string) =>
  fetch(`${svc.origin}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });

const settings = (svc: Running, path: string, init: RequestInit = {}) =>
  fetch(`${svc.origin}/settings/assistants${path}`, { ...init, headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json', ...init.headers } });

describe('assistant sign-in with OAuth 2.1', () => {
  it('publishes the discovery documents a client needs, starting from the 401', async () => {
    const svc = await start();
    const res = await fetch(`${svc.origin}/mcp`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate')!;
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
    expect(metadataUrl).toBe(`${svc.origin}/.well-known/oauth-protected-resource/mcp`);

    const resource = await discoverOAuthProtectedResourceMetadata(`${svc.origin}/mcp`, { resourceMetadataUrl: metadataUrl });
    expect(resource).toMatchObject({ resource: `${svc.origin}/mcp`, authorization_servers: [svc.origin], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
    const server = await discoverAuthorizationServerMetadata(svc.origin);
    expect(server).toMatchObject({
      issuer: svc.origin,
      authorization_endpoint: `${svc.origin}/oauth/authorize`,
      token_endpoint: `${svc.origin}/oauth/token`,
      registration_endpoint: `${svc.origin}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      client_id_metadata_document_supported: true,
    });
    // RFC 8414's own path answers, not only OpenID discovery.
    expect((await fetch(`${svc.origin}/.well-known/oauth-authorization-server`)).status).toBe(200);
    const status = await (await fetch(`${svc.origin}/mcp/status`)).json();
    expect(status).toMatchObject({ auth: ['bearer_api_key', 'oauth2'], authorization_server: svc.origin, protected_resource_metadata: metadataUrl });
  });

  it('signs in end to end with the SDK client: registration, consent with a daily limit, token, tool calls within that limit', async () => {
    const svc = await start();
    const { client, oauth, page } = await signIn(svc, undefined, { dailyLimit: '15' });
    expect(page).toContain('Test Assistant');
    expect(oauth.clientInfo?.client_id).toBeTruthy();
    // Issue 29 item 19: the SDK 2.x adds offline_access (listed by the server's metadata, and the client registers
    // for refresh_token) with prompt=consent, beyond the challenge's scope; either way it gets a refresh token.
    expect(oauth.authorizationUrl!.searchParams.get('scope')).toBe('mcp offline_access');
    expect(oauth.authorizationUrl!.searchParams.get('prompt')).toBe('consent');
    expect(oauth.savedTokens?.refresh_token).toEqual(expect.any(String));
    const account = await tool(client, 'get_account');
    expect(account.data.assistant).toMatchObject({ daily_limit: 15, used_today: 0 });

    const made = await tool(client, 'create_clip', { prompt: 'a paper boat', duration: 5, max_credits: 10 });
    expect(made.isError).toBe(false);
    const listed = await (await fetch(`${svc.origin}/v1/videos`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).json();
    expect(listed.data.map((video: { id: unknown }) => String(video.id))).toContain(String(made.data.id ?? made.data.clip_id));
    const over = await tool(client, 'create_clip', { prompt: 'a second boat', duration: 5, max_credits: 10 });
    expect(over.error?.error).toBe('daily_limit_reached');
    await client.close();
  });

  it('refuses a wrong PKCE verifier, a missing challenge, and the plain method', async () => {
    const svc = await start();
    const metadata = (await discoverAuthorizationServerMetadata(svc.origin))!;
    const redirectUrl = 'http://127.0.0.1:9/callback';
    const clientInformation = await registerClient(svc.origin, { metadata, clientMetadata: { client_name: 'PKCE test', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' } });
    const resource = new URL(`${svc.origin}/mcp`);
    const { authorizationUrl, codeVerifier } = await startAuthorization(svc.origin, { metadata, clientInformation, redirectUrl, scope: 'mcp', resource });
    const { landed } = await answerConsent(authorizationUrl, { apiKey: svc.apiKey });
    const authorizationCode = landed.searchParams.get('code')!;
    const iss = landed.searchParams.get('iss')!;
    const wrong = `${codeVerifier.slice(0, -4)}AAAA`;
    await expect(exchangeAuthorization(svc.origin, { metadata, clientInformation, authorizationCode, iss, codeVerifier: wrong, redirectUri: redirectUrl, resource })).rejects.toThrow(/invalid_grant|grant/i);
    // The right verifier redeems it, once: a second redemption of the same code is refused.
    const tokens = await exchangeAuthorization(svc.origin, { metadata, clientInformation, authorizationCode, iss, codeVerifier, redirectUri: redirectUrl, resource });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect((await mcpWith(svc, tokens.access_token)).status).toBe(200);
    await expect(exchangeAuthorization(svc.origin, { metadata, clientInformation, authorizationCode, iss, codeVerifier, redirectUri: redirectUrl, resource })).rejects.toThrow(/invalid_grant|grant/i);

    for (const [name, value] of [['code_challenge', null], ['code_challenge_method', 'plain']] as const) {
      const url = new URL(authorizationUrl);
      if (value === null) url.searchParams.delete(name);
      else url.searchParams.set(name, value);
      // Refused before any person saw the page, so shown on the service's page, not redirected.
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('invalid_request');
    }
  });

  it('binds tokens to {origin}/mcp: another resource is refused at authorization, and a token for another audience at /mcp', async () => {
    const svc = await start();
    const metadata = (await discoverAuthorizationServerMetadata(svc.origin))!;
    const redirectUrl = 'http://127.0.0.1:9/callback';
    const clientInformation = await registerClient(svc.origin, { metadata, clientMetadata: { client_name: 'Resource test', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' } });
    const { authorizationUrl } = await startAuthorization(svc.origin, { metadata, clientInformation, redirectUrl, scope: 'mcp', resource: new URL('https://api.elsewhere.example/mcp') });
    // A client nobody approved yet gets the error on a page of the service, never a redirect (no open redirector).
    const refused = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
    expect(await refused.text()).toContain('invalid_target');

    // A real token of this server, but for another audience (as another resource server's would be).
    const { client, oauth } = await signIn(svc);
    await client.close();
    const { provider } = await assistantEndpoint(svc.app)!.signIn.oauth();
    const good = await provider.AccessToken.find(oauth.savedTokens!.access_token);
    const foreign = new provider.AccessToken({ accountId: good!.accountId, clientId: good!.clientId, grantId: good!.grantId!, aud: 'https://api.elsewhere.example/mcp', scope: 'mcp', gty: 'authorization_code' } as never);
    const foreignToken = await foreign.save();
    expect((await mcpWith(svc, oauth.savedTokens!.access_token)).status).toBe(200);
    const res = await mcpWith(svc, foreignToken);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await mcpWith(svc, 'not-a-token-at-all')).status).toBe(401);
  });

  it('is no open redirector, refuses http redirect URIs off loopback, and limits registrations per address', async () => {
    const svc = await start();
    const register = (redirect: string) =>
      fetch(`${svc.origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'R', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }) });
    const plainHttp = await register('http://evil.example/cb');
    expect(plainHttp.status).toBe(400);
    expect(await plainHttp.json()).toMatchObject({ error: 'invalid_redirect_uri', error_description: expect.stringContaining('loopback') });

    const evil = await (await register('https://evil.example/cb')).json();
    const bounce = new URL(`${svc.origin}/oauth/authorize`);
    for (const [name, value] of Object.entries({ client_id: evil.client_id, redirect_uri: 'https://evil.example/cb', response_type: 'code', scope: 'mcp', prompt: 'none', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })) bounce.searchParams.set(name, value);
    const res = await fetch(bounce, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    // Sign-ins in progress stay in memory: a stranger's GETs never reach the data file.
    expect([...svc.app.service.store.table('oauth').values()].some((row) => String(row.id).startsWith('Interaction:'))).toBe(false);

    let last = 0;
    for (let i = 0; i < 20 && last !== 429; i++) last = (await register(`https://client${i}.example/cb`)).status;
    expect(last).toBe(429);
  });

  it('lists, limits and disconnects assistants from /settings/assistants; a disconnected one is refused at once and cannot refresh', async () => {
    const svc = await start();
    const { client, oauth } = await signIn(svc);
    await client.close();
    const list = await (await settings(svc, '')).json();
    const approved = list.data.find((row: { kind: string }) => row.kind === 'oauth');
    expect(approved).toMatchObject({ name: 'Test Assistant', daily_limit: 10, daily_limit_is_default: true, disconnected_at: null });

    const patched = await settings(svc, `/${approved.id}`, { method: 'PATCH', body: JSON.stringify({ daily_limit: 40 }) });
    expect(await patched.json()).toMatchObject({ daily_limit: 40, daily_limit_is_default: false });
    const bad = await settings(svc, `/${approved.id}`, { method: 'PATCH', body: JSON.stringify({ daily_limit: -1 }) });
    expect(bad.status).toBe(400);
    const again = await connected(svc, oauth);
    expect((await tool(again, 'get_account')).data.assistant).toMatchObject({ daily_limit: 40 });
    await again.close();

    const gone = await settings(svc, `/${approved.id}`, { method: 'DELETE' });
    expect(await gone.json()).toMatchObject({ id: approved.id, disconnected: true });
    expect((await mcpWith(svc, oauth.savedTokens!.access_token)).status).toBe(401);
    const metadata = (await discoverAuthorizationServerMetadata(svc.origin))!;
    const refresh = await fetch(metadata.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: oauth.savedTokens!.refresh_token!, client_id: oauth.clientInfo!.client_id }).toString(),
    });
    expect(refresh.status).toBe(400);
    expect((await refresh.json()).error).toBe('invalid_grant');
    // The same API key is an assistant of its own on /mcp; disconnecting it leaves /v1 working.
    expect((await mcpWith(svc, svc.apiKey)).status).toBe(200);
    const keyRow = (await (await settings(svc, '')).json()).data.find((row: { kind: string }) => row.kind === 'api_key');
    await settings(svc, `/${keyRow.id}`, { method: 'DELETE' });
    expect((await mcpWith(svc, svc.apiKey)).status).toBe(401);
    expect((await fetch(`${svc.origin}/v1/account`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).status).toBe(200);
    expect((await settings(svc, '/asst_unknown', { method: 'DELETE' })).status).toBe(404);
  });

  it('sends a decline back as access_denied, and ends a sign-in after five wrong API keys', async () => {
    const svc = await start();
    const declined = new MemoryOAuthClient();
    await expect(new Client({ name: 'a', version: '1' }).connect(new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { authProvider: declined }))).rejects.toBeInstanceOf(UnauthorizedError);
    const { landed } = await answerConsent(declined.authorizationUrl!, { apiKey: '', decision: 'deny' });
    expect(landed.searchParams.get('error')).toBe('access_denied');

    const guessed = new MemoryOAuthClient();
    await expect(new Client({ name: 'a', version: '1' }).connect(new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { authProvider: guessed }))).rejects.toBeInstanceOf(UnauthorizedError);
    const jar = new CookieJar();
    const start1 = await jar.fetch(guessed.authorizationUrl!);
    const consentUrl = new URL(start1.headers.get('location')!, svc.origin);
    const post = (body: Record<string, string>, origin = svc.origin) =>
      jar.fetch(consentUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: new URLSearchParams(body).toString() });
    expect((await post({ api_key: svc.apiKey, decision: 'approve' }, 'https://evil.example')).status).toBe(403);
    const badLimit = await post({ api_key: svc.apiKey, daily_limit: '2.5', decision: 'approve' });
    expect(badLimit.status).toBe(400);
    expect(await badLimit.text()).toContain('whole number');
    for (let attempt = 1; attempt < 5; attempt++) {
      const res = await post({ api_key: `wrong-key-${attempt}`, decision: 'approve' });
      expect(res.status).toBe(401);
      expect(await res.text()).toContain('unknown or was revoked');
    }
    const fifth = await post({ api_key: 'wrong-key-5', decision: 'approve' });
    expect(fifth.status).toBe(303);
    let at = new URL(fifth.headers.get('location')!, svc.origin);
    const resumed = await jar.fetch(at);
    at = new URL(resumed.headers.get('location')!, at);
    expect(at.searchParams.get('error')).toBe('access_denied');
    // The sign-in is over: its page says so.
    expect((await jar.fetch(consentUrl)).status).toBe(400);
  });

  it('accepts a client ID metadata document as client_id, without registration', async () => {
    const clientId = 'https://assistant.example/oauth/client.json';
    const document = { client_id: clientId, client_name: 'Metadata Document Assistant', redirect_uris: ['http://127.0.0.1:9/callback'], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
    const fetched: string[] = [];
    // Injected as the service's fetchImage is: the test reaches no address off this machine.
    const fetchClientMetadata = (async (url: string | URL) => {
      fetched.push(String(url));
      return String(url) === clientId ? new Response(JSON.stringify(document), { headers: { 'content-type': 'application/json' } }) : new Response('no', { status: 404 });
    }) as typeof fetch;
    const svc = await start({ fetchClientMetadata });
    const oauth = new MemoryOAuthClient({ client_name: 'Metadata Document Assistant' }, { clientMetadataUrl: clientId });
    const { client, page } = await signIn(svc, oauth);
    expect(oauth.clientInfo?.client_id).toBe(clientId);
    expect(fetched).toContain(clientId);
    expect(page).toContain('Metadata Document Assistant');
    expect((await tool(client, 'list_effects')).isError).toBe(false);
    await client.close();
  });

  it('keeps connections, tokens and the spending ledger across a restart of the service', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cliphook-oauth-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const clock = new SimulatedClock({ frozen: true });
    const before = await start({ file, clock });
    const { client, oauth } = await signIn(before);
    expect((await tool(client, 'create_clip', { prompt: 'a lantern', duration: 4, max_credits: 8 })).isError).toBe(false);
    await client.close();
    await stop(before);

    const after = await start({ file, clock });
    // A new port is a new origin: the token was bound to the old one, so it must be refused…
    expect((await mcpWith(after, oauth.savedTokens!.access_token)).status).toBe(401);
    await stop(after);
    // …and on the same origin it keeps working, with what it spent still counted.
    const again = await start({ file, clock, origin: before.origin });
    again.app.service.origin = before.origin;
    const server = createServer(again.app);
    const port = Number(new URL(before.origin).port);
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    try {
      const resumed = await connected(again, oauth);
      expect((await tool(resumed, 'get_account')).data.assistant).toMatchObject({ used_today: 8 });
      await resumed.close();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
