// No open redirector (RFC 9700, 4.11.2): registration is open, so an authorization error for a client goes
// back to its redirect URI only after a person answered the consent page in that sign-in, or when the
// browser's session is of an account that approved the client. Every spelling of the route and every
// response mode is checked.
import { afterEach, describe, expect, it } from 'vitest';
import { answerConsent, CookieJar, serveApp } from './oauth-helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function start() {
  return serveApp(closers);
}

const EVIL = 'https://evil.example/cb';

async function register(origin: string): Promise<string> {
  const res = await fetch(`${origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'R', redirect_uris: [EVIL], token_endpoint_auth_method: 'none' }) });
  return ((await res.json()) as { client_id: string }).client_id;
}

/** An authorization request that fails at once (prompt=none without a session: login_required). */
function failing(origin: string, path: string, clientId: string, extra: Record<string, string> = {}): URL {
  const url = new URL(`${origin}${path}`);
  const params = { client_id: clientId, redirect_uri: EVIL, response_type: 'code', scope: 'mcp', prompt: 'none', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', ...extra };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url;
}

async function expectPage(url: URL, fetcher: (url: URL, init: RequestInit) => Promise<Response> = (u, init) => fetch(u, init)) {
  const res = await fetcher(url, { redirect: 'manual' });
  const body = await res.text();
  expect(res.status).toBe(400);
  expect(res.headers.get('location')).toBeNull();
  expect(body).not.toContain('evil.example');
  expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  return body;
}

describe('authorization errors never bounce a stranger to a registered redirect URI', () => {
  it('on every spelling of the route and in every response mode', async () => {
    const svc = await start();
    const id = await register(svc.origin);
    expect(await expectPage(failing(svc.origin, '/oauth/authorize', id))).toContain('login_required');
    await expectPage(failing(svc.origin, '/oauth/authorize', id, { response_mode: 'fragment' }));
    await expectPage(failing(svc.origin, '/oauth/authorize', id, { response_mode: 'form_post' }));
    await expectPage(failing(svc.origin, '/oauth/AUTHORIZE', id));
    await expectPage(failing(svc.origin, '/oauth/authorize/', id));
    // The resume route without its cookie ("authorization request has expired").
    await expectPage(failing(svc.origin, '/oauth/authorize/anything', id));
  });

  it('even for a client another account approved; but for the browser of the account that approved it, errors go back', async () => {
    const svc = await start();
    const id = await register(svc.origin);
    const approve = new URL(`${svc.origin}/oauth/authorize`);
    const params = { client_id: id, redirect_uri: EVIL, response_type: 'code', scope: 'mcp', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', resource: `${svc.origin}/mcp` };
    for (const [name, value] of Object.entries(params)) approve.searchParams.set(name, value);
    const approver = new CookieJar();
    const { landed } = await answerConsent(approve, { apiKey: svc.apiKey }, approver);
    expect(landed.searchParams.get('code')).toBeTruthy();
    // Anyone else (no session): a page.
    await expectPage(failing(svc.origin, '/oauth/authorize', id, { prompt: 'consent', resource: 'https://elsewhere.example/' }));
    // The approver's own browser: the error goes back to the client, as OAuth expects.
    const res = await approver.fetch(failing(svc.origin, '/oauth/authorize', id, { prompt: 'consent', resource: 'https://elsewhere.example/' }));
    expect(res.status).toBe(303);
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
  });

  it('a person who declines on the page is sent back to the client with access_denied', async () => {
    const svc = await start();
    const id = await register(svc.origin);
    const url = failing(svc.origin, '/oauth/authorize', id, { prompt: 'consent', resource: `${svc.origin}/mcp` });
    const { landed } = await answerConsent(url, { apiKey: '', decision: 'deny' });
    expect(landed.origin + landed.pathname).toBe(EVIL);
    expect(landed.searchParams.get('error')).toBe('access_denied');
  });

  it('limits registrations and sign-in starts per address, whatever the path spelling', async () => {
    const svc = await start();
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const path = i % 2 === 0 ? '/oauth/REGISTER' : '/oauth/register/';
      const res = await fetch(`${svc.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: `c${i}`, redirect_uris: [`https://c${i}.example/cb`], token_endpoint_auth_method: 'none' }) });
      statuses.push(res.status);
    }
    expect(statuses.filter((status) => status === 201)).toHaveLength(20);
    expect(statuses.at(-1)).toBe(429);
    // No registration access tokens pile up in the data file.
    expect([...svc.app.service.store.table('oauth').values()].filter((row) => String(row.id).startsWith('RegistrationAccessToken:'))).toEqual([]);

    const id = await register(svc.origin).catch(() => '');
    let last = 0;
    for (let i = 0; i < 70 && last !== 429; i++) last = (await fetch(failing(svc.origin, i % 2 ? '/oauth/Authorize' : '/oauth/authorize', id || 'x'), { redirect: 'manual' })).status;
    expect(last).toBe(429);
  });
});
