// The emitter on BullMQ (issue 13): deliveries/s from one and from two worker processes sharing one queue on
// a private redis-server, against the file outbox emitter in the same run, to one local receiver answering 200.
//   node --import tsx bench/emitter-bullmq.ts [--deliveries 4000] [--concurrency 16] [--rounds 3]
// Each side sends its deliveries and delivers them, in processes of their own: the file outbox emitter in
// one; each BullMQ process sends its share (half of them with two) and its worker takes whatever is due,
// from either. The clock runs from "go" until the receiver has answered every delivery. The receiver is a
// bare node:http server in a worker thread of the bench process, so it costs no emitter's event loop; emitter
// processes are started before the clock, and each sends and delivers a warm-up of its own first (`--warmup`, 1,000): their start-up (loading bullmq) and the JIT are not counted.
// Target: two worker processes >= 1.6x one.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis.js';
import type { WebhookEmitter } from '../src/index.js';
import { intOption, median, num, ratio, table, target, template, windowProfiler } from './lib.js';
import { code } from './parts/code.js';

// The emitter as users run it: the built package (bench/parts/code.ts); `measured` is its own switches.
const { measured } = await code<typeof import('../src/emitter/measure.js')>('emitter/measure.js');
const { bullmqQueue, createEmitter, FileOutbox } = await code<typeof import('../src/index.js')>('index.js');

const DELIVERIES = intOption('deliveries', 'BENCH_DELIVERIES', 4_000);
const CONCURRENCY = intOption('concurrency', 'BENCH_CONCURRENCY', 16);
const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 3);
const TARGET = 1.6;
/** Deliveries each emitter process sends and delivers before "go", not timed. */
const WARMUP = intOption('warmup', 'BENCH_WARMUP', 1_000);
const SECRET = 'whsec_bench';

const payload = (id: number): Record<string, unknown> => {
  const { event: _e, delivered_at: _d, ...rest } = template('video.completed');
  return { ...rest, id };
};

/** Sends `count` deliveries numbered from `from`, all at once, as a burst of clips finishing would. */
function sendAll(emitter: WebhookEmitter, url: string, from: number, count: number): Promise<unknown> {
  return Promise.all(Array.from({ length: count }, (_, i) => emitter.send({ url, secret: SECRET, event: 'video.completed', payload: payload(from + i) })));
}

interface Receiver {
  url: string;
  /** Requests answered so far. */
  count(): number;
  stop(): Promise<number>;
}

/** A receiver answering 200 `{"received":true}` on 127.0.0.1, in its own thread, counting what it answered. */
async function startReceiver(): Promise<Receiver> {
  const counter = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { createServer } = require('node:http');
     const { parentPort, workerData } = require('node:worker_threads');
     const server = createServer((req, res) => { req.resume(); req.on('end', () => {
       res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"received":true}'); Atomics.add(workerData, 0, 1); }); });
     server.keepAliveTimeout = 60000;
     server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
    { eval: true, workerData: counter },
  );
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  return { url: `http://127.0.0.1:${port}/webhooks`, count: () => Atomics.load(counter, 0), stop: () => worker.terminate() };
}

async function waitFor(done: () => boolean, what: string, seconds = 120): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`no ${what} after ${seconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Deliveries/s and CPU µs per delivery of the file outbox emitter, sending and delivering `DELIVERIES` in a process of its own. */
async function fileOutbox(receiver: Receiver): Promise<{ perSecond: number; cpuPerDelivery: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-'));
  try {
    const run = await workers(`file:${dir}`, 'outbox', receiver, 1);
    return { perSecond: run.perSecond, cpuPerDelivery: run.cpuPerDelivery };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** redis-server's CPU seconds so far (INFO cpu), asked on a connection of its own. */
async function redisCpu(redisUrl: string): Promise<number> {
  const client = new Redis(redisUrl);
  try {
    const info = await client.info('cpu');
    const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)![1]);
    return field('used_cpu_sys') + field('used_cpu_user');
  } finally {
    client.disconnect();
  }
}

interface BullmqRun {
  perSecond: number;
  /** CPU µs per delivery of the worker processes together, of redis-server, and of this process (the receiver's thread, and the polling). */
  cpuPerDelivery: number;
  redisPerDelivery: number;
  benchPerDelivery: number;
  /** Milliseconds from "go" to the first delivery answered (the sends go first), and deliveries/s from then on. */
  firstMs: number;
  afterFirstPerSecond: number;
}

/** Deliveries/s of `processes` BullMQ worker processes on a fresh queue, each sending its share, and the CPU µs per delivery of each part. */
async function bullmq(redisUrl: string, receiver: Receiver, processes: number, variant = ''): Promise<BullmqRun> {
  const run = await workers(redisUrl, `bench-${randomBytes(4).toString('hex')}`, receiver, processes, variant);
  return { ...run, redisPerDelivery: ((await redisCpu(redisUrl)) - run.redisBefore) * 1e6 / DELIVERIES };
}

/** Runs `processes` worker processes (`where`: a Redis URL, or `file:<dir>`), each sending its share, until every delivery was answered. */
async function workers(where: string, name: string, receiver: Receiver, processes: number, variant = ''): Promise<Omit<BullmqRun, 'redisPerDelivery'> & { redisBefore: number }> {
  const redisUrl = where.startsWith('file:') ? null : where;
  const share = Math.ceil(DELIVERIES / processes);
  const children: { child: ChildProcess; exited: Promise<void>; lines: string[] }[] = [];
  try {
    for (let i = 0; i < processes; i++) {
      const count = Math.min(share, DELIVERIES - i * share);
      const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'worker', where, name, receiver.url, String(1 + i * share), String(count), ...process.argv.slice(2)], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: { ...process.env, BENCH_VARIANT: variant },
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const lines: string[] = [];
      children.push({ child, exited, lines });
      child.stdout!.on('data', (chunk: Buffer) => void lines.push(...chunk.toString().split('\n').filter(Boolean)));
      await waitFor(() => lines.includes('ready') || child.exitCode !== null, 'ready worker', 30);
      if (!lines.includes('ready')) throw new Error('a worker process did not start');
    }
    const redisBefore = redisUrl ? await redisCpu(redisUrl) : 0;
    const before = receiver.count();
    const benchBefore = process.cpuUsage();
    const started = performance.now();
    for (const { child } of children) child.stdin!.write('go\n');
    let first = 0;
    await waitFor(() => {
      const answered = receiver.count() - before;
      if (answered > 0 && first === 0) first = performance.now();
      return answered >= DELIVERIES;
    }, `${processes}-process deliveries`);
    const ended = performance.now();
    const perSecond = DELIVERIES / ((ended - started) / 1000);
    const { user, system } = process.cpuUsage(benchBefore);
    for (const { child } of children) child.stdin!.write('cpu\n');
    const cpuOf = (lines: string[]) => lines.find((line) => line.startsWith('cpu '));
    await waitFor(() => children.every(({ lines }) => cpuOf(lines)), 'CPU figures', 10);
    const cpu = children.reduce((sum, { lines }) => sum + Number(cpuOf(lines)!.slice(4)), 0);
    return { perSecond, cpuPerDelivery: cpu / DELIVERIES, redisBefore, benchPerDelivery: (user + system) / DELIVERIES, firstMs: first - started, afterFirstPerSecond: (DELIVERIES - 1) / ((ended - first) / 1000) };
  } finally {
    for (const { child } of children) child.kill('SIGTERM');
    await Promise.all(children.map(({ exited }) => exited));
  }
}

const VARIANTS: ReadonlyArray<[variant: string, what: string, without: string]> = [
  ['events', "listeners on the emitter's `attempt`, `delivered` and `failed` (as the service and the inspector attach them)", 'added by the listeners'],
  ['mirror', 'the record mirror off: no subscription to the changes every process publishes', 'what the mirror costs'],
  ['jobOptions', "per-job options off: a job with its id only (no delay, attempts, the schedule's backoff, removal once done)", 'what the options cost'],
  ['replyBody', "the receiver's reply not read: its status only, the body drained unread", 'what reading the reply costs'],
];

/**
 * What each part of the emitter on BullMQ costs its worker process: one worker process with the part
 * turned off (or, for events, listeners added), interleaved with one with everything on, `ROUNDS` times;
 * each difference is taken within its round. BullMQ's own event stream (an XADD per state change, in its
 * Lua scripts) cannot be turned off in bullmq 6: its cost is in redis-server's CPU, not the worker's.
 */
async function features(redisUrl: string, receiver: Receiver): Promise<string> {
  const base: number[] = [];
  const cpu = new Map<string, number[]>(VARIANTS.map(([variant]) => [variant, []]));
  const delta = new Map<string, number[]>(VARIANTS.map(([variant]) => [variant, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const all = (await bullmq(redisUrl, receiver, 1)).cpuPerDelivery;
    base.push(all);
    for (const [variant] of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const run = (await bullmq(redisUrl, receiver, 1, variant)).cpuPerDelivery;
      cpu.get(variant)!.push(run);
      delta.get(variant)!.push(variant === 'events' ? run - all : all - run);
    }
  }
  const rows = VARIANTS.map(([variant, what, without]) => [what, num(median(cpu.get(variant)!)), `${num(median(delta.get(variant)!))} µs (${without})`, `${((median(delta.get(variant)!) / median(base)) * 100).toFixed(0)} %`]);
  return [
    `What each part costs the worker process (one worker process, ${num(DELIVERIES)} deliveries; each variant interleaved with everything on, ${ROUNDS} rounds; medians of the differences within a round):\n`,
    table(['one BullMQ worker process', 'CPU µs per delivery', 'difference', 'of all on'], [['everything on (as shipped)', num(median(base)), '—', '100 %'], ...rows]),
    '',
    "BullMQ's own event stream (an XADD per state change: added, waiting, active, completed) is written by its Lua scripts and cannot be turned off in bullmq 6; it costs redis-server, not the worker.",
  ].join('\n');
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const receiver = await startReceiver();
  try {
    // Warm-up: JIT, sockets, Redis's script cache (each side runs in fresh processes anyway).
    await fileOutbox(receiver);
    await bullmq(redis.url, receiver, 1);
    const series = () => ({ rate: [] as number[], cpu: [] as number[], redis: [] as number[], bench: [] as number[], first: [] as number[], after: [] as number[] });
    const file = series();
    const one = series();
    const two = series();
    const twoOverOne: number[] = [];
    const oneOverFile: number[] = [];
    const cpuOverFile: number[] = [];
    const load = loadavg()[0]!;
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order, so neither side always runs on a warmer (or busier) machine.
      const sides = round % 2 === 0 ? (['file', 'one', 'two'] as const) : (['two', 'one', 'file'] as const);
      for (const side of sides) {
        if (side === 'file') {
          const run = await fileOutbox(receiver);
          file.rate.push(run.perSecond);
          file.cpu.push(run.cpuPerDelivery);
          continue;
        }
        const run = await bullmq(redis.url, receiver, side === 'one' ? 1 : 2);
        const to = side === 'one' ? one : two;
        to.rate.push(run.perSecond);
        to.cpu.push(run.cpuPerDelivery);
        to.redis.push(run.redisPerDelivery);
        to.bench.push(run.benchPerDelivery);
        to.first.push(run.firstMs);
        to.after.push(run.afterFirstPerSecond);
      }
      twoOverOne.push(two.rate.at(-1)! / one.rate.at(-1)!);
      oneOverFile.push(one.rate.at(-1)! / file.rate.at(-1)!);
      cpuOverFile.push(one.cpu.at(-1)! / file.cpu.at(-1)!);
    }
    const scale = median(twoOverOne);
    const cpuRatio = median(cpuOverFile);
    console.log(`Emitter on BullMQ: node ${process.version}, ${num(DELIVERIES)} deliveries x ${ROUNDS} rounds, concurrency ${CONCURRENCY} per process, ${cpus().length} CPUs, load average ${load.toFixed(1)} at the start. Each emitter runs in processes of its own; ratios are medians of the ratios within each round.\n`);
    console.log(table(['emitter', 'deliveries/s (median)', 'vs file outbox', 'vs one BullMQ process', 'emitter process CPU µs per delivery', 'vs file outbox', 'redis-server CPU µs per delivery', 'receiver (bench process) CPU µs per delivery'], [
      ['file outbox, one process', num(median(file.rate)), '1.00×', '—', num(median(file.cpu)), '1.00×', '—', '—'],
      ['BullMQ, one worker process', num(median(one.rate)), `${median(oneOverFile).toFixed(2)}×`, '1.00×', num(median(one.cpu)), `${cpuRatio.toFixed(2)}×`, num(median(one.redis)), num(median(one.bench))],
      ['BullMQ, two worker processes', num(median(two.rate)), ratio(median(two.rate), median(file.rate)), `${scale.toFixed(2)}×`, `${num(median(two.cpu))} (both together)`, ratio(median(two.cpu), median(file.cpu)), num(median(two.redis)), num(median(two.bench))],
    ]));
    // On a machine of few cores every part shares them: how busy they were, from the figures above.
    const busy = (perSecond: number, ...cpu: number[][]) => ((perSecond * cpu.reduce((sum, part) => sum + median(part), 0)) / 1e6).toFixed(2);
    console.log(`\nCores busy (deliveries/s × CPU per delivery of workers + Redis + receiver), of ${cpus().length}: one worker process ${busy(median(one.rate), one.cpu, one.redis, one.bench)}, two ${busy(median(two.rate), two.cpu, two.redis, two.bench)}; Redis alone ${busy(median(one.rate), one.redis)} and ${busy(median(two.rate), two.redis)}.`);
    console.log(`First delivery answered ${num(median(one.first))} ms after "go" with one worker process, ${num(median(two.first))} ms with two (the sends come first); from then on ${num(median(one.after))} and ${num(median(two.after))} deliveries/s (${ratio(median(two.after), median(one.after))}), for reference only: the target is on the whole run.`);
    console.log('');
    // BENCH_FEATURES=0 skips what each part costs, for quick A/B runs.
    if (process.env.BENCH_FEATURES !== '0') console.log(`${await features(redis.url, receiver)}\n`);
    console.log(target(`BullMQ worker CPU per delivery <= 2× the file outbox emitter's (${cpuRatio.toFixed(2)}×)`, cpuRatio <= 2));
    console.log(target(`two worker processes >= ${TARGET}× one (${scale.toFixed(2)}×)`, scale >= TARGET));
  } finally {
    await receiver.stop();
    await redis.stop();
  }
}

// A worker process: `emitter-bullmq.ts worker <redis url | file:<dir>> <queue> <url> <from> <count>`: the
// emitter on BullMQ, or with `file:` the file outbox emitter, each in a process of its own so their CPU
// per delivery is measured alike. Prints "ready" once started, sends its share on "go" (a line on stdin),
// and stops on SIGTERM.
if (process.argv[2] === 'worker') {
  const [, , , where, name, url, from, count] = process.argv;
  // BENCH_VARIANT: one part turned off (src/emitter/measure.ts), or listeners on the emitter's events.
  const variant = process.env.BENCH_VARIANT ?? '';
  if (variant in measured) measured[variant as keyof typeof measured] = false;
  const logger = { info: () => undefined, warn: (m: string) => console.error(m), error: (m: string) => console.error(m) };
  const emitter = where!.startsWith('file:')
    ? createEmitter({ store: new FileOutbox({ file: join(where!.slice(5), 'outbox.json') }), concurrency: CONCURRENCY, allowPrivateNetworks: true, retainFinished: DELIVERIES, logger })
    : createEmitter({ queue: bullmqQueue({ url: where!, name: name! }), concurrency: CONCURRENCY, allowPrivateNetworks: true, retainFinished: DELIVERIES, logger });
  if (variant === 'events') {
    // What the service and the inspector listen to: every attempt and every outcome, as a delivery view.
    let heard = 0;
    for (const name of ['attempt', 'delivered', 'failed'] as const) emitter.on(name, () => void heard++);
  }
  await emitter.start();
  // Warm-up, not timed: the JIT, the sockets, Redis's scripts. What is measured is the steady state.
  const warm = await Promise.all(Array.from({ length: WARMUP }, (_, i) => emitter.send({ url: url!, secret: SECRET, event: 'video.completed', payload: payload(1e9 + Number(from) * 10 + i) })));
  while (warm.some(({ id }) => emitter.get(id)?.state !== 'delivered')) await new Promise((resolve) => setTimeout(resolve, 20));
  const profiler = windowProfiler(`${where!.startsWith('file:') ? 'file-outbox' : 'bullmq-worker'}-${process.pid}`);
  process.stdout.write('ready\n');
  let cpu = process.cpuUsage();
  process.stdin.once('data', () => {
    void profiler.start().then(() => {
      cpu = process.cpuUsage();
      void sendAll(emitter, url!, Number(from), Number(count));
    });
  });
  // Asked by the bench once every delivery was answered: the CPU this process spent since "go".
  process.stdin.on('data', (line) => {
    if (!line.toString().includes('cpu')) return;
    const { user, system } = process.cpuUsage(cpu);
    void profiler.stop().then(() => process.stdout.write(`cpu ${user + system}\n`));
  });
  process.once('SIGTERM', () => void emitter.stop().then(() => process.exit(0)));
} else {
  await main();
}
