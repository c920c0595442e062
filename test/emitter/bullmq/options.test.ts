import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { bullmqQueue, createEmitter, MemoryOutbox } from 'cliphook';

describe('bullmqQueue()', () => {
  it('applies the defaults and says where Redis is without its password', () => {
    const queue = bullmqQueue({ url: 'redis://:s3cret@redis.internal:6380/2' });
    expect(queue).toMatchObject({ kind: 'bullmq', prefix: 'cliphook', name: 'webhooks', lockDurationMs: 30_000, stalledIntervalMs: 30_000 });
    expect(queue.where).toBe('redis://redis.internal:6380');
    expect(Object.isFrozen(queue)).toBe(true);
    expect(bullmqQueue({ connection: { host: '10.0.0.5' }, name: 'hooks', prefix: 'app' }).where).toBe('redis://10.0.0.5:6379');
  });

  it('takes an ioredis client without connecting it', () => {
    const client = new Redis({ lazyConnect: true });
    expect(bullmqQueue({ connection: client }).connection).toBe(client);
    expect(client.status).toBe('wait');
    client.disconnect();
  });

  it.each([
    [{}, /either `url`.*or `connection`/],
    [{ url: 'redis://a', connection: {} }, /either `url`.*and not both/],
    [{ url: 'http://127.0.0.1:6379' }, /`url`.*redis:\/\//],
    [{ url: 'not a url' }, /`url`/],
    [{ connection: 'redis://a' }, /`connection`/],
    [{ connection: { keyPrefix: 'app:' } }, /`keyPrefix`.*`prefix`/],
    [{ url: 'redis://a', prefix: '' }, /`prefix`/],
    [{ url: 'redis://a', name: 'a:b' }, /`name`.*":"/],
    [{ url: 'redis://a', lockDurationMs: 0 }, /`lockDurationMs`/],
    [{ url: 'redis://a', stalledIntervalMs: 1.5 }, /`stalledIntervalMs`/],
  ])('throws a TypeError naming the option for %o', (options, message) => {
    expect(() => bullmqQueue(options as never)).toThrow(TypeError);
    expect(() => bullmqQueue(options as never)).toThrow(message);
  });
});

describe('createEmitter() on Redis', () => {
  it.each([
    [{ queue: bullmqQueue({ url: 'redis://a' }), store: new MemoryOutbox() }, /one of `store`, `queue` and `redisUrl`/],
    [{ queue: bullmqQueue({ url: 'redis://a' }), redisUrl: 'redis://a' }, /one of `store`, `queue` and `redisUrl`/],
    [{ queue: { kind: 'bullmq', url: 'redis://a' } }, /`queue`.*bullmqQueue/],
    [{ redisUrl: 'localhost:6379' }, /`redisUrl`.*redis:\/\//],
    [{ redisUrl: 'redis://a', concurrency: 0 }, /`concurrency`/],
  ])('throws a TypeError naming the option for %o', (options, message) => {
    expect(() => createEmitter(options as never)).toThrow(TypeError);
    expect(() => createEmitter(options as never)).toThrow(message);
  });

  it('connects nothing until start(), so an emitter that is never started is stopped at once', async () => {
    const emitter = createEmitter({ redisUrl: 'redis://127.0.0.1:1' });
    expect(emitter.list()).toEqual([]);
    expect(emitter.stats).toEqual({ pending: 0, inFlight: 0, total: 0 });
    await emitter.stop();
    await expect(emitter.start()).rejects.toMatchObject({ code: 'emitter_stopped' });
  });
});
