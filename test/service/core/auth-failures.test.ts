// Issue 20 item 6: failed authentications are limited per client address on /v1, /settings, /mcp and the
// pages that take an API key (consent, top-up), on the service's clock, in bounded memory.
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
    expect(failures.size).toBe(3);
  });
});

const wrong = (n: number) => ({ authorization: `Bearer sk_this_is_not_a_key_${String(n).padStart(4, '0')}` });

describe('failed authentication per client address', () => {
  it('answers 429 rate_limit_exceeded with Retry-After after 30 unknown keys, to the right key too, until the window ends', async () => {
    const clock = new SimulatedClock({ frozen: true });
    svc = await startService({ clock });
    const right = { authorization: `Bearer ${svc.apiKey}` };
    for (let i = 0; i < 30; i++) {
      const path = ['/v1/account', '/settings/keys', '/v1/videos'][i % 3]!;
      expect((await fetch(`${svc.origin}${path}`, { headers: wrong(i) })).status).toBe(401);
    }
    for (const headers of [wrong(99), right]) {
      const refused = await fetch(`${svc.url}/account`, { headers });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(await refused.json()).toMatchObject({ code: 'rate_limit_exceeded', retry_after: 60 });
    }
    // The assistant endpoint and the pages that take a key count the same address.
    const mcp = await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...right, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(mcp.status).toBe(429);
    const page = await fetch(`${svc.origin}/settings/top-up/form`, { method: 'POST', headers: { origin: svc.origin, 'content-type': 'application/x-www-form-urlencoded' }, body: `api_key=${svc.apiKey}&credits=5` });
    expect(page.status).toBe(429);
    expect(page.headers.get('retry-after')).toBe('60');
    // Public endpoints are not affected.
    expect((await fetch(`${svc.url}/pricing`)).status).toBe(200);
    await clock.advance(60_000);
    expect((await fetch(`${svc.url}/account`, { headers: right })).status).toBe(200);
  });

  it('counts wrong keys on the top-up page and bearer tokens on /mcp too', async () => {
    svc = await startService({ clock: new SimulatedClock({ frozen: true }) });
    for (let i = 0; i < 15; i++) {
      const page = await fetch(`${svc.origin}/settings/top-up/form`, { method: 'POST', headers: { origin: svc.origin, 'content-type': 'application/x-www-form-urlencoded' }, body: `api_key=sk_wrong_${i}_abcdefghijklmnopqrstu&credits=5` });
      expect(page.status).toBe(401);
      const mcp = await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...wrong(i), 'content-type': 'application/json' }, body: '{}' });
      expect(mcp.status).toBe(401);
    }
    expect((await fetch(`${svc.url}/account`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).status).toBe(429);
  });
});
