import { describe, expect, it } from 'vitest';
import { RateLimiter, rateLimitHeaders } from '../../../src/service/core/gate.js';

const T0 = Date.parse('2026-01-01T00:00:00.250Z');

describe('RateLimiter (spec 8: 60 requests per minute per key)', () => {
  it('lets 60 through in a minute, refuses the 61st with the seconds until the window ends, then starts over', () => {
    let now = T0;
    const limiter = new RateLimiter({ now: () => now });
    for (let i = 1; i <= 60; i++) {
      const decision = limiter.check('key_a');
      expect(decision).toMatchObject({ allowed: true, limit: 60, remaining: 60 - i });
    }
    now += 20_000;
    const refused = limiter.check('key_a');
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfter: 40, reset: Math.ceil((T0 + 60_000) / 1000) });
    // Another key has its own window.
    expect(limiter.check('key_b')).toMatchObject({ allowed: true, remaining: 59 });
    now = T0 + 59_999;
    expect(limiter.check('key_a')).toMatchObject({ allowed: false, retryAfter: 1 });
    now = T0 + 60_000;
    expect(limiter.check('key_a')).toMatchObject({ allowed: true, remaining: 59, reset: Math.ceil((T0 + 120_000) / 1000) });
  });

  it('gives the headers as integers, Reset in Unix seconds', () => {
    const limiter = new RateLimiter({ now: () => T0, limit: 2, windowMs: 1_000 });
    expect(rateLimitHeaders(limiter.check('k'))).toEqual({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': String(Math.ceil((T0 + 1_000) / 1000)) });
  });

  it('refuses bad options', () => {
    expect(() => new RateLimiter({ now: () => 0, limit: 0 })).toThrow(/`limit`/);
    expect(() => new RateLimiter({ now: () => 0, windowMs: 1.5 })).toThrow(/`windowMs`/);
  });
});
