// Issue 20 item 6: failed authentications are limited per client address on /v1, /settings, /mcp and the
// pages that take an API key (consent, top-up), on the service's clock, in bounded memory. Issue 29 item 4:
// only credentials that are not valid are counted and refused; a flood of addresses never unlocks one.
import { afterEach, describe, expect, it } from 'vitest';
import { AUTH_FAILURES_PER_WINDOW, AuthFailures } from '../../../src/service/core/auth-failures.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';

let svc: StartedService | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

describe('AuthFailures', () => {
  it('refuses an address once it failed 30 times in its minute, until the minute ends', () => {
    let now = 1_000_000;
    const failures = new AuthFailures({ now: () => now });
    for (let i = 0; i < AUTH_FAILURES_PER_WINDOW; i++) {
      expect(failures.gate('203.0.113.7').allowed).toBe(true);
      failures.fail('203.0.113.7');
    }
    now += 20_000;
    expect(failures.gate('203.0.113.7')).toEqual({ allowed: false, limit: 30, retryAfter: 40 });
    // Another address, and the same one written as an IPv4-mapped address, are told apart correctly.
    expect(failures.gate('203.0.113.8').allowed).toBe(true);
    expect(failures.gate('::ffff:203.0.113.7').allowed).toBe(false);
    now += 40_000;
    expect(failures.gate('203.0.113.7').allowed).toBe(true);
  });

  it('counts IPv6 per /64, and keeps at most maxAddresses', () => {
    const failures = new AuthFailures({ now: () => 0, limit: 2, maxAddresses: 3 });
    failures.fail('2001:db8:1:2::1');
    failures.fail('2001:db8:1:2:ffff::9');
    expect(failures.gate('2001:0db8:0001:0002::77').allowed).toBe(false);
    expect(failures.gate('2001:db8:1:3::1').allowed).toBe(true);
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']) failures.fail(address);
    // Three counted (the oldest count forgotten) and the locked /64 besides.
    expect(failures.size).toBe(4);
    expect(failures.gate('2001:db8:1:2::5').allowed).toBe(false);
  });

  // Issue 29 item 4: the flood used to push the lock out of the table, unlocking the guesser.
  it('keeps a locked address locked through a flood of 10,000 fresh addresses', () => {
    let now = 1_000_000;
    const failures = new AuthFailures({ now: () => now });
    for (let i = 0; i < AUTH_FAILURES_PER_WINDOW; i++) failures.fail('127.0.0.1');
    for (let i = 0; i < 10_000; i++) failures.fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    now += 30_000;
    expect(failures.gate('127.0.0.1')).toEqual({ allowed: false, limit: 30, retryAfter: 30 });
    // The table stays bounded: 10,000 counted at most, the lock besides.
    expect(failures.size).toBe(10_001);
    now += 30_000;
    expect(failures.gate('127.0.0.1').allowed).toBe(true);
  });

  it('refuses every guess while its table of locks is full, rather than drop a lock, until the oldest ends', () => {
    let now = 0;
    const failures = new AuthFailures({ now: () => now, limit: 1, maxAddresses: 2 });
    failures.fail('10.0.0.1');
    now += 10_000;
    failures.fail('10.0.0.2');
    failures.fail('10.0.0.3');
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']) expect(failures.gate(address).allowed).toBe(false);
    expect(failures.gate('10.0.0.4')).toEqual({ allowed: false, limit: 1, retryAfter: 50 });
    now = 60_000;
    // The first lock ended: room for 10.0.0.3's, and new addresses may guess again.
    expect(failures.gate('10.0.0.4').allowed).toBe(true);
    expect(failures.gate('10.0.0.2').allowed).toBe(false);
  });

  it('refuses options that are not positive integers, naming them', () => {
    expect(() => new AuthFailures({ now: () => 0, maxAddresses: 0 })).toThrow(/`maxAddresses`/);
    expect(() => new AuthFailures({ now: () => 0, limit: 1.5 })).toThrow(/`limit`/);
  });
});

const wrong = (n: number) => ({ authorization: `Bearer sk_this_is_not_a_key_${String(n).padStart(4, '0')}` });

describe('failed authentication per client address', () => {
  // Issue 29 item 4: the limit used to refuse every credential of the address, the right key, the admin
  // token and key-less requests too, so any local process could lock out every 127.0.0.1 client.
  it('answers 429 with Retry-After to the 31st unknown key, while the right key, the admin token and public routes still work', async () => {
    const clock = new SimulatedClock({ frozen: true });
    svc = await startService({ clock });
    const right = { authorization: `Bearer ${svc.apiKey}` };
    for (let i = 0; i < 30; i++) {
      const path = ['/v1/account', '/settings/keys', '/v1/videos'][i % 3]!;
      expect((await fetch(`${svc.origin}${path}`, { headers: wrong(i) })).status).toBe(401);
    }
    const refused = await fetch(`${svc.url}/account`, { headers: wrong(30) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await refused.json()).toMatchObject({ code: 'rate_limit_exceeded', retry_after: 60 });
    expect((await fetch(`${svc.url}/account`, { headers: right })).status).toBe(200);
    const admin = { authorization: `Bearer ${svc.adminToken}` };
    expect((await fetch(`${svc.origin}/test_helpers/clock`, { headers: admin })).status).toBe(200);
    expect((await fetch(`${svc.origin}/test_helpers/accounts`, { method: 'POST', headers: admin })).status).toBe(201);
    expect((await fetch(`${svc.url}/pricing`)).status).toBe(200);
    // Without any key a keyed route says so (401), not 429: there is no guess to limit.
    expect((await fetch(`${svc.url}/account`)).status).toBe(401);
    // The assistant endpoint and the pages that take a key let the right key through too.
    const mcp = await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...right, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(mcp.status).toBe(200);
    const page = await fetch(`${svc.origin}/settings/top-up/form`, { method: 'POST', headers: { origin: svc.origin, 'content-type': 'application/x-www-form-urlencoded' }, body: `api_key=${svc.apiKey}&credits=5` });
    expect(page.status).not.toBe(429);
    expect(page.status).toBeLessThan(400);
    // Guessing stays limited everywhere a credential is checked.
    expect((await fetch(`${svc.url}/account`, { headers: wrong(31) })).status).toBe(429);
    expect((await fetch(`${svc.origin}/test_helpers/clock`, { headers: wrong(32) })).status).toBe(429);
    expect((await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...wrong(33), 'content-type': 'application/json' }, body: '{}' })).status).toBe(429);
    const wrongPage = await fetch(`${svc.origin}/settings/top-up/form`, { method: 'POST', headers: { origin: svc.origin, 'content-type': 'application/x-www-form-urlencoded' }, body: 'api_key=sk_wrong_wrong_wrong_wrong_wrong&credits=5' });
    expect(wrongPage.status).toBe(429);
    expect(wrongPage.headers.get('retry-after')).toBe('60');
    await clock.advance(60_000);
    expect((await fetch(`${svc.url}/account`, { headers: wrong(34) })).status).toBe(401);
  });

  it('counts wrong keys on the top-up page and bearer tokens on /mcp too', async () => {
    svc = await startService({ clock: new SimulatedClock({ frozen: true }) });
    for (let i = 0; i < 15; i++) {
      const page = await fetch(`${svc.origin}/settings/top-up/form`, { method: 'POST', headers: { origin: svc.origin, 'content-type': 'application/x-www-form-urlencoded' }, body: `api_key=sk_wrong_${i}_abcdefghijklmnopqrstu&credits=5` });
      expect(page.status).toBe(401);
      const mcp = await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...wrong(i), 'content-type': 'application/json' }, body: '{}' });
      expect(mcp.status).toBe(401);
    }
    expect((await fetch(`${svc.url}/account`, { headers: wrong(99) })).status).toBe(429);
    expect((await fetch(`${svc.url}/account`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).status).toBe(200);
  });

  it('keeps an address locked while 10,000 fresh addresses guess, and the right key working from it', async () => {
    const clock = new SimulatedClock({ frozen: true });
    svc = await startService({ clock });
    const { gate } = svc.service;
    const guess = (address: string, n: number) => {
      try {
        gate.identify(wrong(n).authorization, address);
        return 'admitted';
      } catch (error) {
        return (error as { code: string }).code;
      }
    };
    for (let i = 0; i < 30; i++) expect(guess('127.0.0.1', i)).toBe('invalid_api_key');
    for (let i = 0; i < 10_000; i++) guess(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, i);
    expect(guess('127.0.0.1', 30)).toBe('rate_limit_exceeded');
    expect(gate.identify(`Bearer ${svc.apiKey}`, '127.0.0.1').account.id).toBe(svc.service.first().accountId);
    expect(gate.identifyAdmin(`Bearer ${svc.adminToken}`, '127.0.0.1', { orKey: false })).toEqual({ admin: true });
    // The admin token sent to a keyed route is a mistake, not a guess: never counted.
    const adminOnV1 = () => {
      try {
        gate.identify(`Bearer ${svc!.adminToken}`, '192.0.2.1');
      } catch (error) {
        return (error as { code: string }).code;
      }
    };
    for (let i = 0; i < 40; i++) expect(adminOnV1()).toBe('invalid_api_key');
    await clock.advance(60_000);
    expect(guess('127.0.0.1', 31)).toBe('invalid_api_key');
  });
});
