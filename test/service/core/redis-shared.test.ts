import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, type ServiceApp } from '../../../src/service/http/app.js';
import { sharedOptions } from '../../../src/service/core/redis/shared.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';

// Two services on one private Redis stand for two `serve` processes behind one load balancer (issue 13):
// what they share is the rate-limit window per key and the idempotency records.
const redis = redisAvailable() ? await startRedis({ persist: true }) : null;
afterAll(() => redis?.stop());
const apps: ServiceApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

const API_KEY = 'sk_shared_test_key_for_two_services';
let prefixes = 0;

async function pair(options: { rateLimitPerMinute?: number; apiKeys?: [string, string] } = {}) {
  const prefix = `svc${++prefixes}:`;
  const start = Date.parse('2026-01-01T00:00:00Z');
  const { apiKeys = [API_KEY, API_KEY], ...rest } = options;
  const make = async (apiKey: string) => {
    const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true, start }), random: () => 0.5, warn: () => undefined, apiKey, balance: 500, redisUrl: redis!.url, redisPrefix: prefix, ...rest });
    apps.push(app);
    return app;
  };
  return [await make(apiKeys[0]), await make(apiKeys[1])] as const;
}

const auth = `Bearer ${API_KEY}`;

describe.runIf(redis)('serve processes sharing Redis (issue 13)', () => {
  it('counts one rate-limit window per key across processes, and both see it end on their clocks', async () => {
    const [a, b] = await pair({ rateLimitPerMinute: 5 });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(i % 2 ? b : a).get('/v1/videos').set('authorization', auth)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await request(a).get('/v1/videos').set('authorization', auth);
    expect(limited.status).toBe(429);
    expect(limited.headers).toMatchObject({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0', 'retry-after': '60' });
    await a.service.clock.advance(60_000);
    await b.service.clock.advance(60_000);
    expect((await request(b).get('/v1/videos').set('authorization', auth)).headers['x-ratelimit-remaining']).toBe('4');
  });

  it('replays on one process what the other made under an Idempotency-Key, charging once', async () => {
    const [a, b] = await pair();
    const first = await request(a).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'retry-me').send({ prompt: 'a fox' });
    expect(first.status).toBe(202);
    const again = await request(b).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'retry-me').send({ prompt: 'a fox' });
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const other = await request(b).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'retry-me').send({ prompt: 'a cat' });
    expect(other).toMatchObject({ status: 422, body: { code: 'idempotency_key_reused' } });
    // One charge across both processes: A paid for the clip, B charged nothing.
    expect(a.service.first().balance).toBe(500 - first.body.credits_used);
    expect(b.service.first().balance).toBe(500);
  });

  it('keeps the records of different API keys apart, though each process numbers its accounts from 1', async () => {
    const [a, b] = await pair({ apiKeys: [API_KEY, 'sk_another_client_key_of_b'] });
    const mine = await request(a).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'same-key').send({ prompt: 'a fox' });
    const theirs = await request(b).post('/v1/videos').set('authorization', 'Bearer sk_another_client_key_of_b').set('idempotency-key', 'same-key').send({ prompt: 'a fox' });
    expect([mine.status, theirs.status]).toEqual([202, 202]);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(b.service.first().balance).toBe(500 - theirs.body.credits_used);
  });

  it('starts a new rate-limit window when another process\'s clock started the current one in this one\'s future', async () => {
    const [a, b] = await pair({ rateLimitPerMinute: 2 });
    await a.service.clock.advance(3_600_000);
    for (let i = 0; i < 2; i++) expect((await request(a).get('/v1/videos').set('authorization', auth)).status).toBe(200);
    // B's clock is an hour behind: it counts from its own now instead of refusing for an hour.
    const behind = await request(b).get('/v1/videos').set('authorization', auth);
    expect(behind.status).toBe(200);
    expect(behind.headers['x-ratelimit-remaining']).toBe('1');
  });

  it('answers 409 in_progress on one process while the first request runs on the other, 422 for another body', async () => {
    const [a, b] = await pair();
    const first = await a.service.idempotency.begin('1', 'running', 'fingerprint-a');
    expect(first.kind).toBe('fresh');
    expect(await b.service.idempotency.begin('1', 'running', 'fingerprint-a')).toEqual({ kind: 'in_progress' });
    expect(await b.service.idempotency.begin('1', 'running', 'fingerprint-b')).toEqual({ kind: 'reused' });
    if (first.kind !== 'fresh') throw new Error(first.kind);
    first.finish(null);
    await first.share(null);
    expect((await b.service.idempotency.begin('1', 'running', 'fingerprint-b')).kind).toBe('fresh');
  });

  it('frees a key on every process when its first request was refused before a task existed', async () => {
    const [a, b] = await pair();
    const refused = await request(a).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'fix-and-retry').send({ prompt: 'x', duration: 99 });
    expect(refused.status).toBe(400);
    await expect.poll(async () => (await request(b).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'fix-and-retry').send({ prompt: 'a fox, fixed' })).status).toBe(202);
  });

  it('writes an answer Redis missed again once Redis is back, so a retry on the other process is replayed', async () => {
    const [a, b] = await pair();
    const first = await a.service.idempotency.begin('1', 'missed', 'fingerprint-a');
    if (first.kind !== 'fresh') throw new Error(first.kind);
    first.finish({ status: 202, body: { id: 41 } });
    await redis!.kill();
    try {
      await expect(first.share({ status: 202, body: { id: 41 } })).rejects.toThrow();
    } finally {
      await redis!.start();
    }
    // Meanwhile the key is still held (409 on B), never free to run again; then the answer lands.
    await expect
      .poll(async () => b.service.idempotency.begin('1', 'missed', 'fingerprint-a'), { timeout: 10_000, interval: 200 })
      .toEqual({ kind: 'replay', response: { status: 202, body: { id: 41 } } });
  });

  it('answers 503 upstream_busy while Redis is down, charging nothing, and carries on once it is back', async () => {
    const [a] = await pair();
    await redis!.kill();
    try {
      const listed = await request(a).get('/v1/videos').set('authorization', auth);
      expect(listed).toMatchObject({ status: 503, body: { code: 'upstream_busy', retryable: true } });
      expect(listed.headers['retry-after']).toBe('5');
    } finally {
      await redis!.start();
    }
    expect(a.service.first().balance).toBe(500);
    await expect.poll(async () => (await request(a).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'after-restart').send({ prompt: 'a fox' })).status, { timeout: 10_000 }).toBe(202);
  });
});

describe('the redis option, checked at construction', () => {
  it('names each method a given client lacks that the service calls: duplicate() too unless an emitter is given (the webhooks’ BullMQ queue needs it)', () => {
    const scriptsOnly = { eval: async () => null, evalsha: async () => null, del: async () => 0 };
    expect(() => sharedOptions({ redis: scriptsOnly as never })).toThrow('Expected `redis` to be an ioredis client (it has no duplicate()).');
    expect(() => sharedOptions({ redis: {} as never })).toThrow('Expected `redis` to be an ioredis client (it has no eval(), evalsha(), del(), duplicate()).');
    expect(() => sharedOptions({ redis: null as never })).toThrow(/it has no eval\(\)/);
    const full = { ...scriptsOnly, duplicate: () => full, options: {} };
    expect(sharedOptions({ redis: full as never })).toEqual({ redis: full, prefix: 'cliphook:service:' });
    // With an emitter of the caller's own, no BullMQ queue is made from the client: duplicate() is not needed.
    expect(sharedOptions({ redis: scriptsOnly as never, emitter: {} })).toEqual({ redis: scriptsOnly, prefix: 'cliphook:service:' });
  });
});
