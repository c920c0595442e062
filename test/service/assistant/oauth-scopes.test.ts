// Issue 20 item 3: the scopes of the assistant's sign-in. No scope means `mcp` (OAuth 2.1 lets the server
// apply a default), an unknown scope is `invalid_scope` before the person is asked anything, and /mcp takes
// only a token that carries `mcp` (403 insufficient_scope). Issue 29 item 19: a refresh token goes with the
// client's registration for the refresh_token grant (the default when `grant_types` is left out), asked
// for with `offline_access` or not; a client registered for the authorization code grant only gets none.
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceApp } from '../../../src/service/http/app.js';
import { assistantEndpoint } from '../../../src/service/http/app-internals.js';
import { answerConsent, serveApp } from './oauth-helpers.js';

interface StartedService {
  app: ServiceApp;
  origin: string;
  apiKey: string;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function start(): Promise<StartedService> {
  return serveApp(closers);
}

const REDIRECT = 'http://127.0.0.1:9/callback';

async function register(svc: StartedService, grantTypes?: string[]): Promise<string> {
  const metadata = { client_name: 'Scoped', redirect_uris: [REDIRECT], ...(grantTypes ? { grant_types: grantTypes } : {}) };
  const res = await fetch(`${svc.origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) });
  return ((await res.json()) as { client_id: string }).client_id;
}

function authorizationUrl(svc: StartedService, clientId: string, scope: string | undefined, verifier: string): URL {
  const url = new URL(`${svc.origin}/oauth/authorize`);
  const params: Record<string, string> = {
    client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', state: 'st',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    ...(scope === undefined ? {} : { scope }),
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url;
}

/** Register, ask for `scope`, approve on the consent page, and exchange the code: the token response. */
async function signIn(svc: StartedService, scope: string | undefined, grantTypes?: string[]) {
  const clientId = await register(svc, grantTypes);
  const verifier = randomBytes(32).toString('base64url');
  const { landed } = await answerConsent(authorizationUrl(svc, clientId, scope, verifier), { apiKey: svc.apiKey });
  expect(landed.searchParams.get('error'), landed.search).toBeNull();
  const body = new URLSearchParams({ grant_type: 'authorization_code', code: landed.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier, client_id: clientId });
  const res = await fetch(`${svc.origin}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; scope: string; refresh_token?: string };
}

const toolsList = (svc: StartedService, token: string) =>
  fetch(`${svc.origin}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });

describe('OAuth scopes of the assistant endpoint', () => {
  it('applies mcp when no scope (or an empty one) is asked for', async () => {
    const svc = await start();
    for (const scope of [undefined, '']) {
      const tokens = await signIn(svc, scope);
      expect(tokens.scope).toBe('mcp');
      expect((await toolsList(svc, tokens.access_token)).status).toBe(200);
    }
  });

  it('gives a refresh token to a client registered for the refresh_token grant, with offline_access or without, and none to one registered without it', async () => {
    const svc = await start();
    for (const grantTypes of [undefined, ['authorization_code', 'refresh_token']]) {
      for (const scope of [undefined, 'mcp', 'offline_access', 'mcp offline_access']) {
        const tokens = await signIn(svc, scope, grantTypes);
        expect(tokens.scope, scope).toBe('mcp');
        expect(tokens.refresh_token, `${scope} ${grantTypes}`).toEqual(expect.any(String));
        expect((await toolsList(svc, tokens.access_token)).status).toBe(200);
      }
    }
    for (const scope of ['mcp', 'mcp offline_access']) {
      const tokens = await signIn(svc, scope, ['authorization_code']);
      expect(tokens.refresh_token, scope).toBeUndefined();
      expect((await toolsList(svc, tokens.access_token)).status).toBe(200);
    }
  });

  it('refuses an unknown scope as invalid_scope before the consent page', async () => {
    const svc = await start();
    const clientId = await register(svc);
    for (const scope of ['profile', 'mcp profile', 'mcp admin']) {
      const res = await fetch(authorizationUrl(svc, clientId, scope, 'v'.repeat(43)), { redirect: 'manual' });
      expect(res.status, scope).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('invalid_scope');
    }
  });

  it('answers 403 insufficient_scope to a token without mcp, naming the scope and the metadata', async () => {
    const svc = await start();
    const tokens = await signIn(svc, 'mcp');
    const { provider, resource } = await assistantEndpoint(svc.app)!.signIn.oauth();
    const found = (await provider.AccessToken.find(tokens.access_token))!;
    const client = (await provider.Client.find(found.clientId!))!;
    // A token as one for `scope=openid` was issued before the default scope existed: scope "".
    const empty = new provider.AccessToken({ accountId: found.accountId!, client, grantId: found.grantId!, gty: 'authorization_code', scope: '', resourceServer: new provider.ResourceServer(resource, { scope: 'mcp', audience: resource, accessTokenFormat: 'opaque' }) });
    const res = await toolsList(svc, await empty.save());
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(((await res.json()) as { code: string }).code).toBe('insufficient_scope');
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="mcp"');
    expect(challenge).toContain(`resource_metadata="${svc.origin}/.well-known/oauth-protected-resource/mcp"`);
    expect((await toolsList(svc, tokens.access_token)).status).toBe(200);
  });
});

