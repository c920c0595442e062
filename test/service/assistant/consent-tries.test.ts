// Issue 20 item 6: five wrong API keys end a sign-in, counted on the sign-in itself, whether or not the
// browser follows the redirect that ends it; a sign-in answered once cannot be answered again.
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { CookieJar, serveApp } from './oauth-helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function start() {
  const { origin, apiKey } = await serveApp(closers);
  return { origin, apiKey };
}

/** Registers a client, starts a sign-in, and returns the consent page's URL and a way to post its form. */
async function openSignIn(origin: string) {
  const reg = await fetch(`${origin}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'T', redirect_uris: ['http://127.0.0.1:9/cb'] }) });
  const { client_id: clientId } = (await reg.json()) as { client_id: string };
  const url = new URL(`${origin}/oauth/authorize`);
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  for (const [name, value] of Object.entries({ client_id: clientId, redirect_uri: 'http://127.0.0.1:9/cb', response_type: 'code', scope: 'mcp', code_challenge: challenge, code_challenge_method: 'S256' })) url.searchParams.set(name, value);
  const jar = new CookieJar();
  const started = await jar.fetch(url);
  const consentUrl = new URL(started.headers.get('location')!, origin);
  expect((await jar.fetch(consentUrl)).status).toBe(200);
  const post = (apiKey: string) =>
    jar.fetch(consentUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: new URLSearchParams({ api_key: apiKey, decision: 'approve' }).toString() });
  return { jar, consentUrl, post };
}

describe('wrong API keys on the consent page', () => {
  it('end the sign-in at the fifth even when the client never follows the redirect: the right key then gets no code', async () => {
    const svc = await start();
    const { jar, consentUrl, post } = await openSignIn(svc.origin);
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 20; attempt++) statuses.push((await post(`sk_wrong_key_number_${attempt}`)).status);
    expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
    expect(statuses[4]).toBe(303);
    expect(new Set(statuses.slice(5))).toEqual(new Set([400]));
    const right = await post(svc.apiKey);
    expect(right.status).toBe(400);
    expect(right.headers.get('location')).toBeNull();
    expect((await jar.fetch(consentUrl)).status).toBe(400);
  });

  // Issue 29 item 4: the right key used to be refused too, so any local process could lock out sign-ins.
  it('count against the address too: past 30 failed authentications, the page answers 429 to a wrong key, and the right key still signs in', async () => {
    const svc = await start();
    const { post } = await openSignIn(svc.origin);
    for (let i = 0; i < 30; i++) expect((await fetch(`${svc.origin}/v1/account`, { headers: { authorization: `Bearer sk_not_a_key_at_all_${i}` } })).status).toBe(401);
    const refused = await post('sk_not_a_key_at_all_either_30');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await refused.text()).toContain('Too many wrong API keys');
    expect((await post(svc.apiKey)).status).toBe(303);
  });

  it('an approved sign-in is not answered twice before its redirect is followed', async () => {
    const svc = await start();
    const { post } = await openSignIn(svc.origin);
    expect((await post(svc.apiKey)).status).toBe(303);
    expect((await post(svc.apiKey)).status).toBe(400);
  });
});
