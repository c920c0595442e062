// Issue 30 item 4: a delivery has one key now, so without an injected clock the Redis store claims it with
// one `SET NX PX GET` and marks it with one `SET PX`, no script; several keys (or a clock) keep the script.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisDeliveryStore, type RedisLike } from '../../src/index.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
let prefixes = 0;

/** A real ioredis client that counts the commands the store sends. */
function counted(client: Redis) {
  const calls: string[] = [];
  const proxy = new Proxy(client, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return (...args: unknown[]) => {
        calls.push(key);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { client: proxy as unknown as RedisLike, calls };
}

describe.runIf(redis)('RedisDeliveryStore, one key, no clock', () => {
  it('claims with SET NX PX GET and marks with SET PX, Redis keeping each for the lease and the retention', async () => {
    const raw = new Redis(redis!.url);
    const { client, calls } = counted(raw);
    const prefix = `one${++prefixes}:`;
    const store = new RedisDeliveryStore({ redis: client, prefix, retentionMs: 3_600_000 });
    try {
      // The first call waits for the client; from then on each is one command.
      expect(await store.claim(['e:video.completed:1'], 60_000, 'a')).toBe('claimed');
      calls.length = 0;
      expect(await store.claim(['e:video.completed:2'], 60_000, 'a')).toBe('claimed');
      expect(await store.claim(['e:video.completed:2'], 60_000, 'b')).toBe('in_progress');
      expect(await raw.pttl(`${prefix}e:video.completed:2`)).toBeGreaterThan(59_000);
      await store.complete(['e:video.completed:2']);
      expect(await store.claim(['e:video.completed:2'], 60_000, 'b')).toBe('processed');
      expect(await raw.get(`${prefix}e:video.completed:2`)).toMatch(/^p\d+$/);
      expect(await raw.pttl(`${prefix}e:video.completed:2`)).toBeGreaterThan(3_590_000);
      expect(calls).toEqual(['set', 'set', 'set', 'set']);
      // Release stays a compare-and-delete script: only the owner's claim goes.
      await store.release(['e:video.completed:1'], 'someone-else');
      expect(await store.claim(['e:video.completed:1'], 60_000, 'b')).toBe('in_progress');
      await store.release(['e:video.completed:1'], 'a');
      expect(await store.claim(['e:video.completed:1'], 60_000, 'b')).toBe('claimed');
    } finally {
      await store.close();
      raw.disconnect();
    }
  });

  it('agrees with the script: keys claimed or marked by a claim over several keys are seen by a one-key claim, and the reverse', async () => {
    const prefix = `mix${++prefixes}:`;
    const store = new RedisDeliveryStore({ url: redis!.url, prefix });
    try {
      expect(await store.claim(['d:1', 'e:1'], 60_000, 'a')).toBe('claimed');
      expect(await store.claim(['e:1'], 60_000, 'b')).toBe('in_progress');
      await store.complete(['d:1', 'e:1']);
      expect(await store.claim(['e:1'], 60_000, 'b')).toBe('processed');
      expect(await store.claim(['e:2'], 60_000, 'a')).toBe('claimed');
      expect(await store.claim(['d:2', 'e:2'], 60_000, 'b')).toBe('in_progress');
      await store.complete(['e:2']);
      expect(await store.claim(['d:3', 'e:2'], 60_000, 'b')).toBe('processed');
    } finally {
      await store.close();
    }
  });

  it('a client without set() (a bare RedisLike) takes the script', async () => {
    const raw = new Redis(redis!.url);
    const client: RedisLike = { eval: (...args) => raw.eval(...(args as [string, number])), quit: () => raw.quit() };
    const store = new RedisDeliveryStore({ redis: client, prefix: `bare${++prefixes}:` });
    try {
      expect(await store.claim(['e:1'], 60_000, 'a')).toBe('claimed');
      expect(await store.claim(['e:1'], 60_000, 'b')).toBe('in_progress');
      await store.complete(['e:1']);
      expect(await store.claim(['e:1'], 60_000, 'b')).toBe('processed');
    } finally {
      await store.close();
      raw.disconnect();
    }
  });
});
