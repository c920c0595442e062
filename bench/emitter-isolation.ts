// One destination's backlog against another's latency. Standalone: node --import tsx bench/emitter-isolation.ts
//   [--samples 200] [--queued 1000]
// One destination holds every request 30 s (a server on 127.0.0.1 that never answers within the run, and
// the emitter's `timeoutMs` of 30 s) with 1,000 deliveries queued for it; the median latency, from `send()`
// to `delivered`, of another destination's deliveries one after another, against the same with the first
// idle. The emitter runs with its defaults (concurrency 16, maxPerDestination 4). Target: <= 2x.
// On the memory outbox (the slots alone), the file outbox (each write also holds the queued 1,000), and
// BullMQ on a private redis-server (its first delivery after the burst is shown apart: it waits while the
// worker parks the burst). The fast receiver runs in a worker thread.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisAvailable, startRedis } from '../test/helpers/redis.js';
import type { EmitterOptions, WebhookEmitter } from '../src/index.js';
import { intOption, median, table, template } from './lib.js';
import { code } from './parts/code.js';
import { startReceiver } from './parts/receiver-thread.js';

// The emitter as users run it: the built package (bench/parts/code.ts).
const { bullmqQueue, createEmitter, FileOutbox, MemoryOutbox } = await code<typeof import('../src/index.js')>('index.js');

const SAMPLES = intOption('samples', 'BENCH_SAMPLES', 200);
const QUEUED = intOption('queued', 'BENCH_QUEUED', 1_000);
const HOLD_MS = 30_000;
const SECRET = 'whsec_bench';
const body = template('video.completed');
const payload = (id: number): Record<string, unknown> => {
  const { event: _e, delivered_at: _d, ...rest } = body;
  return { ...rest, id };
};

/** A server on 127.0.0.1 that reads each request and never answers it; `stop` cuts every connection. */
async function startTarpit(): Promise<{ url: string; held: () => number; stop: () => Promise<void> }> {
  let held = 0;
  const server = http.createServer((req, res) => {
    held++;
    req.resume();
    // The response's close, not the request's: a request closes once its body is read.
    res.once('close', () => void held--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    held: () => held,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Milliseconds from `send()` to `delivered` of `count` deliveries to `url`, one after another. */
async function latencies(emitter: WebhookEmitter, url: string, count: number, from: number): Promise<number[]> {
  const took: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const delivered = new Promise<void>((resolve) => {
      const listener = (): void => {
        emitter.off('delivered', listener);
        resolve();
      };
      emitter.on('delivered', listener);
    });
    await emitter.send({ url, secret: SECRET, event: 'video.completed', payload: payload(from + i) });
    await delivered;
    took.push(performance.now() - started);
  }
  return took;
}

const fmt = (n: number, digits = 2): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function isolation(name: string, options: (dir: string) => EmitterOptions): Promise<string[]> {
  const receiver = await startReceiver();
  const tarpit = await startTarpit();
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-'));
  const emitter = createEmitter({ ...options(dir), timeoutMs: HOLD_MS, allowPrivateNetworks: true, retainFinished: QUEUED * 2 });
  await emitter.start();
  await latencies(emitter, receiver.url, SAMPLES, 1); // warm-up: JIT, sockets
  const alone = median(await latencies(emitter, receiver.url, SAMPLES, 1_000));
  await Promise.all(Array.from({ length: QUEUED }, (_, i) =>
    emitter.send({ url: tarpit.url, secret: SECRET, event: 'video.completed', payload: payload(10_000 + i) })));
  for (let waited = 0; tarpit.held() === 0; waited++) {
    if (waited > 1_000) throw new Error('the tarpit got no request');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const started = performance.now();
  const [first, ...rest] = await latencies(emitter, receiver.url, SAMPLES + 1, 2_000);
  const loaded = median(rest);
  const seconds = (performance.now() - started) / 1000;
  const held = tarpit.held();
  if (seconds >= HOLD_MS / 1000) throw new Error('the samples outlasted the tarpit\'s 30 s hold: measure fewer');
  // Stopping first, so no queued attempt begins; cutting the tarpit's connections then ends the ones held.
  const stopped = emitter.stop();
  await tarpit.stop();
  await stopped;
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
  const ratio = loaded / alone;
  return [name, `${fmt(alone)} ms`, `${fmt(first!)} ms`, `${fmt(loaded)} ms`, `${fmt(ratio)}x: ${ratio <= 2 ? 'met' : 'NOT met'}`, `${held} of ${QUEUED.toLocaleString('en-US')}`];
}

const rows = [
  await isolation('memory outbox', () => ({ store: new MemoryOutbox() })),
  await isolation('file outbox', (dir) => ({ store: new FileOutbox({ file: join(dir, 'outbox.json') }) })),
];
if (redisAvailable()) {
  const redis = await startRedis();
  try {
    rows.push(await isolation('BullMQ, one worker process', () => ({ queue: bullmqQueue({ url: redis.url, name: 'isolation' }) })));
  } finally {
    await redis.stop();
  }
}
console.log(`Isolation of destinations: node ${process.version}, ${cpus().length} CPUs; one destination holds every request ${HOLD_MS / 1000} s with ${QUEUED.toLocaleString('en-US')} deliveries queued for it, another's latency from send() to delivered (median of ${SAMPLES}, one at a time); defaults: concurrency 16, maxPerDestination 4.\n`);
console.log(table(['emitter', 'latency alone', 'first after the burst', 'latency beside the backlog', 'vs alone (target <= 2x)', 'held by the tarpit'], rows));
console.log('\nThe file outbox rewrites its file at each group commit, every held delivery included: beside 1,000 more, each send waits for a bigger write (that, not a slot, is its extra latency).');
