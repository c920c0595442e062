import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { bullmqQueue, createEmitter, type Delivery } from '../../src/index.js';
import { completedPayload, startServer } from '../emitter/helpers.js';
import { redisAvailable, startRedis, type PrivateRedis } from '../helpers/redis.js';

const child = fileURLToPath(new URL('./emitter-bullmq.child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const available = redisAvailable();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function privateRedis(persist = false): Promise<PrivateRedis> {
  const redis = await startRedis({ persist });
  cleanups.push(() => redis.stop());
  return redis;
}

interface Worker {
  proc: ChildProcess;
  lines: string[];
  /** Ids of the deliveries this process made an attempt of, one entry per attempt. */
  attempts(): string[];
  exited: Promise<void>;
}

/** An emitter process on the queue `name` (see emitter-bullmq.child.ts); resolves once it is ready. */
async function worker(redisUrl: string, name: string, send?: { url: string; count: number }): Promise<Worker> {
  const args = [child, redisUrl, name, ...(send ? [send.url, String(send.count)] : [])];
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CONCURRENCY: '4' } });
  const lines: string[] = [];
  let buffered = '';
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => void lines.push(`stderr: ${chunk.trim()}`));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  cleanups.push(async () => {
    proc.kill('SIGKILL');
    await exited;
  });
  await expect.poll(() => lines.includes('ready') || proc.exitCode !== null, { timeout: 15_000 }).toBe(true);
  if (!lines.includes('ready')) throw new Error(`the worker did not start: ${lines.join('\n')}`);
  const attempts = () => lines.filter((line) => line.startsWith('attempt ')).map((line) => line.split(' ')[1]!);
  return { proc, lines, attempts, exited };
}

/**
 * Waits until the real clock reaches `at`: for a deadline kept by Redis, which reads no injected clock
 * (a lock's expiry). Anything the test can be told about is awaited on that instead.
 */
async function untilRealTime(at: number): Promise<void> {
  // Redis expires a key once its clock is past the instant: a millisecond more, so both agree.
  const wait = at + 1 - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

/** Every delivery record of the queue `name`, as Redis holds it. */
async function records(redisUrl: string, name: string): Promise<Delivery[]> {
  const client = new Redis(redisUrl);
  try {
    return Object.values(await client.hgetall(`cliphook:${name}:emitter:records`)).map((text) => JSON.parse(text) as Delivery);
  } finally {
    client.disconnect();
  }
}

describe.runIf(available)('the emitter on BullMQ across processes (issue 13)', () => {
  it('shares the work between two worker processes: every delivery is delivered exactly once, and both made some', async () => {
    const redis = await privateRedis();
    const name = `share-${randomBytes(4).toString('hex')}`;
    // A receiver that takes a few milliseconds per request, so neither worker can take everything first.
    const server = await startServer((_req, res) => void setTimeout(() => res.end('ok'), 5));
    cleanups.push(() => server.close());
    const b = await worker(redis.url, name);
    const a = await worker(redis.url, name, { url: server.url, count: 200 });
    await expect.poll(() => a.attempts().length + b.attempts().length, { timeout: 30_000 }).toBe(200);
    const ids = server.received.map((request) => request.headers['x-service-delivery'] as string);
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
    expect(new Set([...a.attempts(), ...b.attempts()])).toEqual(new Set(ids));
    expect(a.attempts().length).toBeGreaterThan(0);
    expect(b.attempts().length).toBeGreaterThan(0);
    const stored = await records(redis.url, name);
    expect(stored).toHaveLength(200);
    expect(stored.every((d) => d.state === 'delivered' && d.attempts.length === 1)).toBe(true);
    for (const w of [a, b]) w.proc.kill('SIGTERM');
    await Promise.all([a.exited, b.exited]);
    expect([a, b].map((w) => w.lines.at(-1))).toEqual(['stopped', 'stopped']);
    expect([...a.lines, ...b.lines].filter((line) => line.startsWith('stderr'))).toEqual([]);
  }, 60_000);

  it('makes the attempt again on another worker when the one making it is SIGKILLed mid-attempt; nothing is lost', async () => {
    const redis = await privateRedis();
    const name = `kill-${randomBytes(4).toString('hex')}`;
    const held: (() => void)[] = [];
    // The first request is held (the receiver is slow), so its worker dies with the attempt in flight.
    const server = await startServer((_req, res) => {
      if (server.received.length === 1) held.push(() => res.end());
      else res.end('ok');
    });
    cleanups.push(async () => {
      for (const release of held) release();
      await server.close();
    });
    const a = await worker(redis.url, name, { url: server.url, count: 1 });
    await expect.poll(() => server.received.length, { timeout: 15_000 }).toBe(1);
    const b = await worker(redis.url, name);
    a.proc.kill('SIGKILL');
    await a.exited;
    // A's lock expires (1 s) and B's stalled check (every 0.5 s) moves the job back: B makes the attempt.
    await expect.poll(() => b.attempts().length, { timeout: 20_000 }).toBe(1);
    const id = server.received[0]!.headers['x-service-delivery'];
    expect(server.received.map((request) => request.headers['x-service-delivery'])).toEqual([id, id]);
    expect(b.attempts()).toEqual([id]);
    expect(a.attempts()).toEqual([]); // its attempt never ended
    await expect.poll(async () => (await records(redis.url, name)).map((d) => [d.id, d.state, d.attempts.map((x) => x.status)])).toEqual([[id, 'delivered', [200]]]);
  }, 60_000);

  it('carries on when Redis restarts under it: says so on the logger, and delivers every queued delivery', async () => {
    const redis = await privateRedis(true);
    const seen = new Map<string, number>();
    // Each delivery's first attempt gets a 503, so some wait in BullMQ's delayed set while Redis restarts.
    const server = await startServer((req, res) => {
      const id = req.headers['x-service-delivery'] as string;
      seen.set(id, (seen.get(id) ?? 0) + 1);
      setTimeout(() => res.writeHead(seen.get(id) === 1 ? 503 : 200).end(), 10);
    });
    cleanups.push(() => server.close());
    const logs: string[] = [];
    const log = (level: string) => (message: string) => void logs.push(`${level}: ${message}`);
    const emitter = createEmitter({
      // A job that was being handed to the worker as Redis went down is held by a lock whose owner never
      // heard of it, until the lock expires and a stalled check frees it: short locks keep that wait short.
      queue: bullmqQueue({ url: redis.url, name: 'restart', lockDurationMs: 1_000, stalledIntervalMs: 500 }),
      allowPrivateNetworks: true,
      concurrency: 4,
      retrySchedule: [200, 200, 200, 200, 200],
      logger: { info: log('info'), warn: log('warn'), error: log('error') },
    });
    cleanups.push(() => emitter.stop());
    await emitter.start();
    const sent = await Promise.all(Array.from({ length: 100 }, (_, i) =>
      emitter.send({ url: server.url, secret: 'whsec_restart', event: 'video.completed', payload: completedPayload(i + 1) })));
    await expect.poll(() => emitter.list({ state: 'delivered', limit: 100 }).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(20);
    expect(emitter.list({ state: 'delivered', limit: 100 }).length).toBeLessThan(100); // mid-run
    await redis.restart();
    await expect.poll(() => sent.map((d) => emitter.get(d.id)?.state).filter((state) => state === 'delivered').length, { timeout: 60_000 }).toBe(100);
    expect(logs.find((line) => line.startsWith('warn: lost the connection to Redis'))).toBeDefined();
    expect(logs.find((line) => line.startsWith('info: reconnected to Redis'))).toBeDefined();
    expect(logs.indexOf(logs.find((line) => line.startsWith('warn: lost'))!)).toBeLessThan(logs.indexOf(logs.find((line) => line.startsWith('info: reconnected'))!));
    expect(logs.filter((line) => line.startsWith('error'))).toEqual([]);
    // What Redis kept agrees: every delivery delivered, after its 503 and a 200.
    const stored = await records(redis.url, 'restart');
    expect(stored).toHaveLength(100);
    expect(stored.every((d) => d.state === 'delivered' && d.attempts.at(-1)!.status === 200)).toBe(true);
  }, 90_000);

  it('waits out an outage longer than its locks: a send() meanwhile resolves once Redis is back, and all is delivered', async () => {
    const redis = await privateRedis(true);
    const server = await startServer((_req, res) => void setTimeout(() => res.end('ok'), 20));
    cleanups.push(() => server.close());
    const logs: string[] = [];
    const log = (level: string) => (message: string) => void logs.push(`${level}: ${message}`);
    const lockDurationMs = 500;
    const emitter = createEmitter({
      queue: bullmqQueue({ url: redis.url, name: 'outage', lockDurationMs, stalledIntervalMs: 250 }),
      allowPrivateNetworks: true,
      concurrency: 4,
      logger: { info: log('info'), warn: log('warn'), error: log('error') },
    });
    cleanups.push(() => emitter.stop());
    await emitter.start();
    const sent = await Promise.all(Array.from({ length: 100 }, (_, i) =>
      emitter.send({ url: server.url, secret: 'whsec_outage', event: 'video.completed', payload: completedPayload(i + 1) })));
    await expect.poll(() => server.received.length).toBeGreaterThan(10);
    await redis.kill();
    // No lock is renewed once Redis is down, and Redis keeps each expiry as a real instant (PXAT): every
    // lock taken before has expired once real time passes this one. Redis reads no injected clock.
    const locksExpired = Date.now() + lockDurationMs;
    let resolved = false;
    const late = emitter.send({ url: server.url, secret: 'whsec_outage', event: 'video.completed', payload: completedPayload(1000) }).finally(() => void (resolved = true));
    await expect.poll(() => logs.some((line) => line.startsWith('warn: lost the connection'))).toBe(true);
    // Longer than the locks: the attempts in flight outlive theirs, and BullMQ says so once Redis is back.
    await untilRealTime(locksExpired);
    expect(resolved).toBe(false);
    await redis.start();
    const all = [...sent, await late];
    await expect.poll(() => all.filter((d) => emitter.get(d.id)?.state === 'delivered').length, { timeout: 30_000 }).toBe(101);
    expect(logs.find((line) => line.startsWith('info: reconnected to Redis'))).toBeDefined();
    // The outage did outlive the locks of the attempts in flight: BullMQ found them gone once Redis was back.
    expect(logs.some((line) => /^warn: BullMQ: (could not renew lock|Missing lock) for job/.test(line))).toBe(true);
    expect(logs.filter((line) => line.startsWith('error'))).toEqual([]);
    expect(new Set(server.received.map((r) => r.headers['x-service-delivery']))).toEqual(new Set(all.map((d) => d.id)));
  }, 60_000);

  it('stops at once while Redis is down, and the attempts it let go are made by the next emitter: nothing is lost', async () => {
    const redis = await privateRedis(true);
    let hold = true;
    const held: (() => void)[] = [];
    const server = await startServer((_req, res) => {
      if (hold) held.push(() => res.end('late'));
      else res.end('ok');
    });
    cleanups.push(async () => {
      for (const release of held) release();
      await server.close();
    });
    const queue = () => bullmqQueue({ url: redis.url, name: 'stop-down', lockDurationMs: 1_000, stalledIntervalMs: 500 });
    const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
    // Five attempts at once to one receiver: its cap must not hold any back.
    const first = createEmitter({ queue: queue(), allowPrivateNetworks: true, logger: quiet, maxPerDestination: 16 });
    cleanups.push(() => first.stop());
    await first.start();
    const sent = await Promise.all(Array.from({ length: 5 }, (_, i) =>
      first.send({ url: server.url, secret: 'whsec_stop', event: 'video.completed', payload: completedPayload(i + 1) })));
    await expect.poll(() => server.received.length).toBe(5); // every attempt in flight, held by the receiver
    await redis.kill();
    await first.stop(); // resolves without Redis: it does not wait for outcomes it cannot record
    hold = false;
    await redis.start();
    const second = createEmitter({ queue: queue(), allowPrivateNetworks: true, logger: quiet });
    cleanups.push(() => second.stop());
    await second.start();
    await expect.poll(() => sent.map((d) => second.get(d.id)?.state), { timeout: 30_000 }).toEqual(new Array(5).fill('delivered'));
    expect(sent.map((d) => second.get(d.id)!.attempts.map((a) => a.status))).toEqual(new Array(5).fill([200]));
  }, 60_000);
});
