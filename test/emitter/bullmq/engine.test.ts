import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { bullmqQueue, createEmitter, EmitterStateError, verifySignature, type BullmqQueueOptions, type EmitterOptions, type WebhookEmitter } from 'cliphook';
import { jobIdOf, recordKeys, RedisRecordStore } from '../../../src/emitter/bullmq/record-store.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';
import { answering, completedPayload, settled, startServer, type TestServer } from '../helpers.js';

const secret = 'whsec_test_bullmq';
const redis = redisAvailable() ? await startRedis() : null;
const client = redis ? new Redis(redis.url) : null;
afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An emitter on the test's Redis, allowed to call local servers, stopped after the test. */
function emitterOn(queue: Partial<BullmqQueueOptions> & { name: string }, options: EmitterOptions = {}): WebhookEmitter {
  const emitter = createEmitter({ queue: bullmqQueue({ url: redis!.url, ...queue }), allowPrivateNetworks: true, ...options });
  cleanups.push(() => emitter.stop());
  return emitter;
}

function track<T extends TestServer>(server: T): T {
  cleanups.push(() => server.close());
  return server;
}

const queueName = () => `engine-${randomBytes(6).toString('hex')}`;
const send = (emitter: WebhookEmitter, url: string, extra: { id?: string } = {}) =>
  emitter.send({ url, secret, event: 'video.completed', payload: completedPayload(), ...extra });

describe.runIf(redis)('the emitter on BullMQ', () => {
  it('refuses to start with a typed error naming Redis when it cannot be reached, and reports no lost connection', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const warnings: string[] = [];
    const emitter = createEmitter({ redisUrl: `redis://127.0.0.1:${port}`, logger: { info: () => undefined, warn: (m) => void warnings.push(m), error: (m) => void warnings.push(m) } });
    const error = await emitter.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmitterStateError);
    expect(error).toMatchObject({ code: 'redis_unreachable', message: expect.stringContaining(`redis://127.0.0.1:${port}`) });
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    await emitter.stop();
    expect(warnings).toEqual([]);
  });

  it('shares one queue between emitters: each sees every delivery, and one id sent by both at once is sent once', async () => {
    const server = track(await answering(200));
    const name = queueName();
    const [a, b] = [emitterOn({ name }), emitterOn({ name })];
    await Promise.all([a.start(), b.start()]);
    const heard: string[] = [];
    a.on('attempt', (d) => void heard.push(d.id));
    b.on('attempt', (d) => void heard.push(d.id));
    const [first, second] = await Promise.all([send(a, server.url, { id: 'dlv_shared_clip_1' }), send(b, server.url, { id: 'dlv_shared_clip_1' })]);
    expect([first.id, second.id]).toEqual(['dlv_shared_clip_1', 'dlv_shared_clip_1']);
    const other = await send(b, server.url);
    await expect.poll(() => [a.get(first.id)?.state, b.get(first.id)?.state, a.get(other.id)?.state, b.get(other.id)?.state]).toEqual(new Array(4).fill('delivered'));
    expect(server.received.map((r) => r.headers['x-service-delivery']).sort()).toEqual([first.id, other.id].sort());
    expect(a.list().map((d) => d.id)).toEqual([other.id, first.id]);
    expect(b.list().map((d) => d.id)).toEqual([other.id, first.id]);
    expect(a.stats).toMatchObject({ pending: 0, total: 2 });
    // Events fire in the process that made the attempt: each attempt is heard once across the two.
    expect(heard.sort()).toEqual([first.id, other.id].sort());
  });

  it('with worker: false, sees and queues deliveries but makes no attempt of its own', async () => {
    const server = track(await answering(200));
    const name = queueName();
    const reader = emitterOn({ name, worker: false });
    await reader.start();
    const queued = await send(reader, server.url);
    const heard: string[] = [];
    reader.on('attempt', (d) => void heard.push(d.id));
    expect(reader.get(queued.id)?.state).toBe('pending');
    const worker = emitterOn({ name });
    await worker.start();
    await expect.poll(() => reader.get(queued.id)?.state).toBe('delivered');
    expect(server.received).toHaveLength(1);
    // Events fire in the process that made the attempt: the reader heard none, so it made none.
    expect(heard).toEqual([]);
  });

  it('redelivers from another process: the same id, a fresh delivered_at and a fresh round', async () => {
    let status = 400;
    const server = track(await startServer((_req, res) => void res.writeHead(status).end()));
    const name = queueName();
    const [a, b] = [emitterOn({ name }), emitterOn({ name })];
    await Promise.all([a.start(), b.start()]);
    const sent = await send(a, server.url);
    // Either worker may make the attempt, and events fire where it was made: both mirrors show it.
    await expect.poll(() => [a.get(sent.id)?.state, b.get(sent.id)?.state]).toEqual(['failed', 'failed']);
    status = 200;
    const again = await b.redeliver(sent.id);
    expect(again).toMatchObject({ id: sent.id, state: 'pending' });
    await expect.poll(() => a.get(sent.id)?.state).toBe('delivered');
    expect(a.get(sent.id)!.attempts.map((attempt) => attempt.status)).toEqual([400, 200]);
    expect(server.received.map((r) => r.headers['x-service-delivery'])).toEqual([sent.id, sent.id]);
    expect(new Set(server.received.map((r) => JSON.parse(r.body).delivered_at)).size).toBe(2);
  });

  it('keeps each secret apart from its record: no published change and no record holds it', async () => {
    const server = track(await answering(503));
    const name = queueName();
    const listener = new Redis(redis!.url);
    cleanups.push(async () => void listener.disconnect());
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => void messages.push(message));
    await listener.subscribe(recordKeys('cliphook', name).channel);
    const emitter = emitterOn({ name });
    await emitter.start();
    const sent = await send(emitter, server.url);
    await expect.poll(() => messages.length).toBeGreaterThanOrEqual(3); // created, begun, attempted
    expect(messages.filter((message) => message.includes(secret))).toEqual([]);
    const { records, secrets } = recordKeys('cliphook', name);
    expect(await client!.hget(records, sent.id)).not.toContain(secret);
    expect(await client!.hget(secrets, sent.id)).toBe(secret);
    expect(verifySignature(server.received[0]!.body, server.received[0]!.headers['x-service-signature'], secret)).toBe(true); // signed with it all the same
  });

  it('at start, queues the first attempt of a delivery whose sender died between its write and its job', async () => {
    const server = track(await answering(200));
    const name = queueName();
    const store = new RedisRecordStore(client!, recordKeys('cliphook', name), 1000);
    const now = Date.now();
    await store.create({
      id: 'dlv_orphan_0001', url: server.url, secret, event: 'video.completed', state: 'pending', retry: true, createdAt: now,
      nextAttemptAt: now, round: 0, attempts: [], payload: JSON.stringify({ event: 'video.completed', ...completedPayload() }), gen: 0, job: jobIdOf('dlv_orphan_0001', 0),
    });
    const emitter = emitterOn({ name });
    await emitter.start();
    expect((await settled(emitter, 'dlv_orphan_0001')).state).toBe('delivered');
    expect(server.received).toHaveLength(1);
  });

  it('walks the whole schedule in one advance() of the service\'s simulated clock, each attempt at its own instant', async () => {
    const server = track(await answering(503));
    const clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-11-22T00:00:00Z') });
    const emitter = emitterOn({ name: queueName() }, { clock });
    // As the service does: each timer the clock fires settles once the emitter has nothing in flight.
    clock.settleWith(async () => {
      while (emitter.stats.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 1));
    });
    await emitter.start();
    const t0 = clock.now();
    const sent = await send(emitter, server.url);
    await expect.poll(() => emitter.get(sent.id)?.attempts.length).toBe(1);
    // BullMQ would wait 30 s, 2 min, … of real time; the simulated clock brings each retry forward.
    await clock.advance(3 * 3_600_000);
    const done = emitter.get(sent.id)!;
    expect(done.state).toBe('failed');
    expect(done.attempts.map((attempt) => attempt.at - t0)).toEqual([0, 30_000, 150_000, 750_000, 2_550_000, 9_750_000]);
    expect(server.received.map((r) => JSON.parse(r.body).delivered_at)).toEqual(done.attempts.map((attempt) => new Date(attempt.at).toISOString()));
  });

  it('takes an ioredis client, duplicates it and leaves it open; its keys live under prefix and name', async () => {
    const server = track(await answering(200));
    const own = new Redis(redis!.url);
    cleanups.push(async () => void own.disconnect());
    const emitter = createEmitter({ queue: bullmqQueue({ connection: own, prefix: 'app', name: 'hooks' }), allowPrivateNetworks: true });
    cleanups.push(() => emitter.stop());
    await emitter.start();
    const sent = await send(emitter, server.url);
    expect((await settled(emitter, sent.id)).state).toBe('delivered');
    await emitter.stop();
    expect(own.status).toBe('ready');
    expect(await own.hexists('app:hooks:emitter:records', sent.id)).toBe(1);
    expect((await own.keys('app:hooks:*')).length).toBeGreaterThan(1); // BullMQ's own keys share the prefix
    expect(await own.keys('cliphook:hooks:*')).toEqual([]);
  });
});

it('loads neither bullmq nor ioredis for an emitter on an outbox, nor for one on Redis until it starts', async () => {
  const child = fileURLToPath(new URL('./lazy-load.child.ts', import.meta.url));
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child], { cwd: root });
  expect(JSON.parse(stdout)).toEqual({
    afterOutbox: { bullmq: false, ioredis: false, state: 'delivered' },
    afterCreate: { bullmq: false, ioredis: false },
    control: { bullmq: false, ioredis: true },
  });
});
