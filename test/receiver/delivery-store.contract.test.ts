import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FileDeliveryStore, MemoryDeliveryStore, RedisDeliveryStore, type DeliveryStore, type DeliveryStoreOptions } from '../../src/index.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { tempDir } from '../helpers/webhooks.js';

// A private redis-server for the Redis store's turn at the contract (issue 13); skipped with a line saying
// how to enable it on a machine without one, never in CI.
const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
let prefixes = 0;

/**
 * One contract for every DeliveryStore. A store joins by adding a factory here (the Redis store will).
 */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const factories: Record<string, (options: DeliveryStoreOptions) => Promise<DeliveryStore>> = {
  memory: async (options) => new MemoryDeliveryStore(options),
  file: async (options) => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    return new FileDeliveryStore({ file: tmp.file('deliveries.json'), ...options });
  },
  ...(redis
    ? {
        redis: async (options: DeliveryStoreOptions) => {
          // A prefix per store: every test starts with nothing claimed.
          const store = new RedisDeliveryStore({ url: redis.url, prefix: `test${++prefixes}:`, ...options });
          cleanups.push(() => store.close());
          return store;
        },
      }
    : {}),
};

describe.each(Object.entries(factories))('DeliveryStore contract: %s', (_name, make) => {
  const clock = () => now;
  let now = 1_700_000_000_000;

  it('claims once: a second claim sees in_progress, a completed one sees processed', async () => {
    const store = await make({ clock });
    expect(await store.claim(['a', 'b'], 1000, 'me')).toBe('claimed');
    expect(await store.claim(['a', 'b'], 1000, 'me')).toBe('in_progress');
    await store.complete(['a', 'b']);
    expect(await store.claim(['a', 'b'], 1000, 'me')).toBe('processed');
    await store.close();
  });

  it('treats the keys together: any processed key makes the claim processed', async () => {
    const store = await make({ clock });
    await store.claim(['d:1', 'e:1'], 1000, 'me');
    await store.complete(['d:1', 'e:1']);
    expect(await store.claim(['d:forged', 'e:1'], 1000, 'me')).toBe('processed');
    // …and holds none of its keys afterwards (the Redis store sets `d:forged` before it finds `e:1`).
    expect(await store.claim(['d:forged', 'e:9'], 1000, 'me')).toBe('claimed');
    expect(await store.claim(['d:other', 'e:2'], 1000, 'me')).toBe('claimed');
    expect(await store.claim(['d:third', 'e:2'], 1000, 'me')).toBe('in_progress');
  });

  it('release frees a claim, and does not forget a processed key', async () => {
    const store = await make({ clock });
    await store.claim(['x'], 1000, 'me');
    await store.release(['x'], 'me');
    expect(await store.claim(['x'], 1000, 'me')).toBe('claimed');
    await store.complete(['x']);
    await store.release(['x'], 'me');
    expect(await store.claim(['x'], 1000, 'me')).toBe('processed');
  });

  it('release leaves alone a claim another owner took over after the lease expired', async () => {
    const store = await make({ clock });
    expect(await store.claim(['slow'], 1000, 'A')).toBe('claimed');
    now += 1001;
    expect(await store.claim(['slow'], 1000, 'B')).toBe('claimed');
    await store.release(['slow'], 'A');
    expect(await store.claim(['slow'], 1000, 'C')).toBe('in_progress');
    await store.release(['slow'], 'B');
    expect(await store.claim(['slow'], 1000, 'C')).toBe('claimed');
  });

  it('lets a claim be taken over once its lease expired', async () => {
    const store = await make({ clock });
    expect(await store.claim(['lease'], 5000, 'me')).toBe('claimed');
    now += 4999;
    expect(await store.claim(['lease'], 5000, 'me')).toBe('in_progress');
    now += 2;
    expect(await store.claim(['lease'], 5000, 'me')).toBe('claimed');
  });

  it('forgets processed keys after the retention time', async () => {
    const store = await make({ clock, retentionMs: 10_000 });
    await store.claim(['old'], 1000, 'me');
    await store.complete(['old']);
    now += 10_001;
    expect(await store.claim(['old'], 1000, 'me')).toBe('claimed');
  });

  it('forgets a key the moment its retention ends, however recently the store last swept', async () => {
    const store = await make({ clock, retentionMs: 100 });
    await store.claim(['short'], 1000, 'me');
    await store.complete(['short']);
    now += 99;
    expect(await store.claim(['short'], 1000, 'me')).toBe('processed');
    now += 1; // retention over, 100 ms after the last sweep
    expect(await store.claim(['short'], 1000, 'me')).toBe('claimed');
  });

  it('gives exactly one claim among many concurrent ones', async () => {
    const store = await make({ clock });
    const outcomes = await Promise.all(Array.from({ length: 100 }, () => store.claim(['race'], 1000, 'me')));
    expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'in_progress')).toHaveLength(99);
  });
});
