import type { SharedIdempotency, SharedStart, StoredResponse } from '../idempotency.js';
import { runScript, type ServiceRedis } from './client.js';

/** How long a key stays "running" in Redis if its process dies mid-request: then the key is free again. */
const RUNNING_LEASE_MS = 120_000;

// KEYS[1]: the key's record, a hash: f (fingerprint), o (owner while running), a (answered at), r (response JSON).
// ARGV: fingerprint, owner, now, window ms, lease ms.
const BEGIN = `local fp, now, window = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local record = redis.call('HMGET', KEYS[1], 'f', 'o', 'a', 'r')
if record[1] then
  if record[3] then
    if now < tonumber(record[3]) + window then
      if record[1] == fp then return { 'replay', record[4] } end
      return { 'reused' }
    end
  else
    if record[1] == fp then return { 'in_progress' } end
    return { 'reused' }
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'f', fp, 'o', ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
return { 'fresh' }`;
// ARGV: owner, now, window ms, response JSON ('' to release the key). Only the owner's running record changes.
const FINISH = `if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
if ARGV[4] == '' then redis.call('DEL', KEYS[1]) return 1 end
redis.call('HDEL', KEYS[1], 'o')
redis.call('HSET', KEYS[1], 'a', ARGV[2], 'r', ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + 60000)
return 1`;


/**
 * Spec section 7's idempotency records in Redis, shared by every `serve` process on it: a key used on one
 * process is replayed (or 409 / 422) on another, so a client's retry that a load balancer sends elsewhere
 * is never charged twice. A key whose process died mid-request is free again after two minutes.
 */
export class RedisIdempotency implements SharedIdempotency {
  readonly #redis: ServiceRedis;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #windowMs: number;

  constructor({ redis, prefix, now, windowMs }: { redis: ServiceRedis; prefix: string; now: () => number; windowMs: number }) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#now = now;
    this.#windowMs = windowMs;
  }

  async begin(id: string, fingerprint: string): Promise<SharedStart> {
    const key = `${this.#prefix}idem:${id}`;
    const owner = crypto.randomUUID();
    const [kind, response] = (await runScript(this.#redis, BEGIN, [key], [fingerprint, owner, this.#now(), this.#windowMs, RUNNING_LEASE_MS])) as [string, string?];
    if (kind === 'replay') return { kind, response: JSON.parse(response!) as StoredResponse };
    if (kind === 'in_progress' || kind === 'reused') return { kind };
    // Until the running lease lapses, no other process takes the key: a write that failed (Redis away a
    // moment) is tried again in the background meanwhile, so a retry elsewhere still finds the answer.
    const leaseEnds = Date.now() + RUNNING_LEASE_MS - 5_000;
    return {
      kind: 'fresh',
      finish: async (stored) => {
        const write = () => runScript(this.#redis, FINISH, [key], [owner, this.#now(), this.#windowMs, stored ? JSON.stringify(stored) : '']);
        try {
          await write();
        } catch (error) {
          retryUntil(write, leaseEnds);
          throw error;
        }
      },
    };
  }

  /** Forgets a key (its request's write failed and was undone), whoever holds it. */
  async forget(id: string): Promise<void> {
    await this.#redis.del(`${this.#prefix}idem:${id}`);
  }
}

/** Runs `write` again every second until it succeeds or `deadline` (ms since the epoch) passes. */
function retryUntil(write: () => Promise<unknown>, deadline: number): void {
  const again = () => {
    if (Date.now() >= deadline) return;
    write().catch(() => setTimeout(again, 1_000).unref());
  };
  setTimeout(again, 1_000).unref();
}
