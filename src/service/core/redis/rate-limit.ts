import type { RateDecision } from '../gate.js';
import { runScript, type ServiceRedis } from './client.js';

// KEYS[1]: the key's window. ARGV: now, limit, window ms. Returns { start, count, allowed }. The window is
// the same fixed one as the in-memory limiter's: it starts at the key's first request and lasts window ms.
const CHECK = `local now, limit, span = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local start = tonumber(redis.call('HGET', KEYS[1], 's'))
local count = 0
-- A window another process's clock started in this one's future is taken as ended: simulated clocks drift.
if start and now >= start and now < start + span then count = tonumber(redis.call('HGET', KEYS[1], 'c')) else start = now end
if count >= limit then return { start, count, 0 } end
redis.call('HSET', KEYS[1], 's', start, 'c', count + 1)
-- Relative: the service's clock is simulated, so its times need not be Redis's.
redis.call('PEXPIRE', KEYS[1], start + span - now + 60000)
return { start, count + 1, 1 }`;

/**
 * Spec section 8's 60 requests a minute per API key, counted in Redis, so every `serve` process sharing
 * the Redis counts against one window per key: behind a load balancer the limit is the spec's, not 60
 * times the number of processes. One script per request (read, count, expire) in one round trip.
 */
export class RedisRateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly #redis: ServiceRedis;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor({ redis, prefix, now, limit, windowMs }: { redis: ServiceRedis; prefix: string; now: () => number; limit: number; windowMs: number }) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#now = now;
    this.limit = limit;
    this.windowMs = windowMs;
  }

  async check(key: string): Promise<RateDecision> {
    const now = this.#now();
    const [start, count, allowed] = (await runScript(this.#redis, CHECK, [`${this.#prefix}rate:${key}`], [now, this.limit, this.windowMs])) as [number, number, number];
    const end = start + this.windowMs;
    const reset = Math.ceil(end / 1000);
    if (allowed === 0) return { allowed: false, limit: this.limit, remaining: 0, reset, retryAfter: Math.max(1, Math.ceil((end - now) / 1000)) };
    return { allowed: true, limit: this.limit, remaining: this.limit - count, reset, retryAfter: 0 };
  }
}
