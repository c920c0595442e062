import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { bullmqQueue, type RedisClientLike, type RedisClientOptions, type RedisDuplicateOptions, type RedisLike, type RelayRedis } from 'cliphook';
import type { ServiceRedisClient } from 'cliphook/service';
import { resolveRelayOptions } from '../../src/relay/server-options.js';
import type { Assignable, Expect } from '../types/type-checks.js';

// The options that take a Redis are typed by structural types of ours, so the published declarations name
// no ioredis. These checks keep them fitting ioredis's own types: each fails to compile
// (`npm run typecheck`) if ioredis's `Redis` stops fitting one, or if our options stop being ioredis's.
export type Checks = [
  Expect<Assignable<Redis, RedisClientLike>>,
  Expect<Assignable<Redis, RelayRedis>>,
  Expect<Assignable<Redis, RedisLike>>,
  Expect<Assignable<Redis, ServiceRedisClient>>,
  Expect<Assignable<RedisClientOptions, RedisOptions>>,
  Expect<Assignable<RedisDuplicateOptions, RedisOptions>>,
  // Every option of ours is one of ioredis's (with its type, by the line above), none invented.
  Expect<Assignable<Exclude<keyof RedisClientOptions | keyof RedisDuplicateOptions, keyof RedisOptions>, never>>,
  // What the emitter and the relay call on a client given: duplicate() with their overrides.
  Expect<Assignable<ReturnType<RedisClientLike['duplicate']>, RedisClientLike>>,
  Expect<Assignable<ReturnType<RelayRedis['duplicate']>, RelayRedis>>,
];

describe('the structural Redis types an ioredis client is given as', () => {
  // A client that never connects: the options are only checked and read, as at construction.
  const client = new Redis({ host: '127.0.0.1', port: 6390, lazyConnect: true });
  afterAll(() => client.disconnect());

  it('lets an ioredis client and ioredis options through bullmqQueue() as `connection`, read for the log lines', () => {
    expect(bullmqQueue({ connection: client }).where).toBe('redis://127.0.0.1:6390');
    const options: RedisClientOptions = { host: '10.0.0.7', port: 6391, password: 'secret', tls: {} };
    expect(bullmqQueue({ connection: options }).where).toBe('redis://10.0.0.7:6391');
    // ioredis's own options type still fits, and a keyPrefix in it is still refused.
    const theirs: RedisOptions = { path: '/tmp/redis.sock', keyPrefix: 'app:' };
    expect(() => bullmqQueue({ connection: theirs })).toThrow(/Expected `connection` without `keyPrefix` \("app:"\)/);
    // A TLS profile ioredis ships by name (6.1 and later) fits as well.
    const cloud: RedisOptions = { host: '10.0.0.6', port: 6380, tls: 'RedisCloudFixed' };
    expect(bullmqQueue({ connection: cloud }).where).toBe('redis://10.0.0.6:6380');
    const unprefixed: RedisOptions = { ...theirs, keyPrefix: undefined };
    expect(bullmqQueue({ connection: unprefixed }).where).toBe('redis+unix:///tmp/redis.sock');
    // Written inline, as BullMQ's and ioredis's docs write them: maxRetriesPerRequest (cliphook sets null anyway),
    // a failover hook, and Redis Sentinel.
    expect(bullmqQueue({ connection: { host: '10.0.0.8', port: 6392, maxRetriesPerRequest: null, reconnectOnError: () => true } }).where).toBe('redis://10.0.0.8:6392');
    const sentinel: RedisClientOptions = { sentinels: [{ host: '10.0.0.9', port: 26379 }], name: 'mymaster', sentinelPassword: 's', role: 'master' };
    expect(() => bullmqQueue({ connection: sentinel })).not.toThrow();
  });

  it('lets an ioredis client through the relay’s `redis`, and refuses an object that is not one', () => {
    expect(resolveRelayOptions({ redis: client }).redis).toEqual({ client, url: null, prefix: 'cliphook:relay:' });
    expect(() => resolveRelayOptions({ redis: {} as RelayRedis })).toThrow(/Expected `redis` to be an ioredis client/);
  });
});
