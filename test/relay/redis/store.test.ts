// RedisRelayStore beyond the shared contract (test/relay/relay-store.test.ts): what it leaves in Redis.
import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { realScheduler } from '../../../src/relay/heartbeat.js';
import { RedisConnection } from '../../../src/relay/redis/connection.js';
import { RedisRelayStore } from '../../../src/relay/redis/store.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());

describe.runIf(redis)('RedisRelayStore in Redis', () => {
  it('keeps every key under its prefix, the token only as its SHA-256, and the body bytes as they came', async () => {
    const prefix = `keys:${randomBytes(4).toString('hex')}:`;
    const connection = new RedisConnection({ client: null, url: redis!.url, logger: { info() {}, warn() {} }, scheduler: realScheduler, clock: Date.now });
    const store = new RedisRelayStore({ connection, prefix, process: 'p1', clock: Date.now, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1e9, maxChannels: 10, maxTotalBytes: 1e9 });
    await store.open();
    const raw = new Redis(redis!.url);
    try {
      const { id, token } = (await store.create())!;
      const body = Buffer.from([0xde, 0xad, 0x00, 0xbe, 0xef]);
      await store.append(id, { receivedAt: 1, method: 'POST', path: '', query: '', headers: [], body, eventName: null, deliveryId: 'dlv_raw' }, 'none');
      await store.ack(id, 1);
      const keys = await raw.keys('*');
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.filter((key) => !key.startsWith(prefix))).toEqual([]);
      const values = await Promise.all(keys.map(async (key) => JSON.stringify(await dump(raw, key))));
      expect(values.join('\n')).not.toContain(token);
      expect(await raw.hget(`${prefix}c:${id}`, 'token')).toBe(createHash('sha256').update(token).digest('hex'));
      expect((await raw.hgetBuffer(`${prefix}c:${id}:ev`, '1'))!.includes(body)).toBe(true);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe.runIf(redis)('RedisRelayStore at maxmemory', () => {
  it('refuses an event with relay_full (507), keeping nothing, while Redis is out of memory', async () => {
    const prefix = `oom:${randomBytes(4).toString('hex')}:`;
    const connection = new RedisConnection({ client: null, url: redis!.url, logger: { info() {}, warn() {} }, scheduler: realScheduler, clock: Date.now });
    const store = new RedisRelayStore({ connection, prefix, process: 'p1', clock: Date.now, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1e9, maxChannels: 10, maxTotalBytes: 1e9 });
    await store.open();
    const raw = new Redis(redis!.url);
    const event = { receivedAt: 1, method: 'POST', path: '', query: '', headers: [], body: Buffer.from('x'), eventName: null, deliveryId: null };
    try {
      const { id } = (await store.create())!;
      await raw.config('SET', 'maxmemory', '1');
      await expect(store.append(id, event, 'none')).rejects.toMatchObject({ code: 'relay_full' });
      await raw.config('SET', 'maxmemory', '0');
      expect(await store.unacked(id, () => true)).toEqual([]);
      expect(await store.append(id, event, 'none')).toMatchObject({ kind: 'stored', event: { seq: 1 } });
    } finally {
      await raw.config('SET', 'maxmemory', '0');
      raw.disconnect();
      await store.close();
    }
  });
});

async function dump(raw: Redis, key: string): Promise<unknown> {
  switch (await raw.type(key)) {
    case 'hash':
      return raw.hgetall(key);
    case 'set':
      return raw.smembers(key);
    case 'zset':
      return raw.zrange(key, '0', '-1');
    default:
      return raw.get(key);
  }
}
