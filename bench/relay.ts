/**
 * Relay benchmarks (issue 4). Run: `node --import tsx bench/relay.ts [--quick]`; prints a markdown table.
 *
 * Baseline: a direct POST to the same local app. Each part runs in its own process, as it would in use
 * (relay on a server, `listen` and the app on a laptop), all on 127.0.0.1:
 *   1. added latency, sender -> relay -> listen -> app vs sender -> app, sequential, interleaved;
 *   2. events/s through one relay and one listener, with a persisted buffer, sent by autocannon;
 *   3. relay memory for 10,000 idle connected listeners, one channel each.
 * Figures from one run on a shared 2-core machine are noisy: read the ratios, not the last digit.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { connectListener, createChannel, createRelayServer, sign } from '../src/index.js';

const QUICK = process.argv.includes('--quick');
const LATENCY_SAMPLES = QUICK ? 500 : 3_000;
const THROUGHPUT_EVENTS = Number(process.env.BENCH_EVENTS ?? (QUICK ? 5_000 : 30_000));
// BENCH_PARTS=throughput (or latency, memory, comma-separated) runs only those parts, for quick A/B runs.
const PARTS = new Set((process.env.BENCH_PARTS ?? 'latency,throughput,memory').split(','));
const THROUGHPUT_CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const IDLE_LISTENERS = QUICK ? 1_000 : 10_000;
const BODY = JSON.stringify({ event: 'video.completed', id: 48213, status: 'done', prompt: 'A red fox trotting through fresh snow'.repeat(12) });
const HEADERS = {
  'content-type': 'application/json',
  'x-service-event': 'video.completed',
  'x-service-delivery': 'dlv_bench',
  'x-service-signature': sign(BODY, 'whsec_bench'),
};

type Message = { url?: string; memory?: NodeJS.MemoryUsage; cpu?: NodeJS.CpuUsage; ready?: boolean };

// ---- child roles ---------------------------------------------------------------------------------

async function role(name: string, args: string[]): Promise<void> {
  // Exit normally when the bench is done, so profilers and exit hooks get to write.
  process.on('SIGTERM', () => process.exit(0));
  const send = (message: Message) => process.send!(message);
  if (name === 'app') {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': 17 }).end('{"received":true}'));
    });
    answerStats(send);
    server.listen(0, '127.0.0.1', () => send({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  } else if (name === 'relay') {
    // 10,000 idle listeners each need a channel: above the default cap of 1,000 (issue 10).
    const relay = createRelayServer({ file: args[0] === 'memory' ? false : args[0]!, maxChannels: 20_000 });
    const { url } = await relay.listen(0, '127.0.0.1');
    answerStats(send);
    send({ url });
  } else if (name === 'listener') {
    const [relayUrl, channel, token, forwardTo] = args as [string, string, string, string];
    await connectListener({ relayUrl, channel, token, forwardTo });
    answerStats(send);
    send({ ready: true });
  }
}

/** Answers the parent's stats question with this process's memory (after a GC) and CPU time. */
function answerStats(send: (message: Message) => void): void {
  process.on('message', () => {
    globalThis.gc?.();
    send({ memory: process.memoryUsage(), cpu: process.cpuUsage() });
  });
}

function spawn(name: string, ...args: string[]): Promise<{ child: ChildProcess; first: Message }> {
  // BENCH_NODE_FLAGS passes e.g. `--cpu-prof` to the parts, to see where their time goes.
  const extra = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = fork(fileURLToPath(import.meta.url), ['--role', name, ...args], { execArgv: ['--import', 'tsx', '--expose-gc', ...extra], stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (first: Message) => resolve({ child, first }));
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
}

function ask(child: ChildProcess): Promise<NodeJS.MemoryUsage> {
  return stats(child).then((message) => message.memory!);
}

function stats(child: ChildProcess): Promise<Message> {
  return new Promise((resolve) => {
    child.once('message', (message: Message) => resolve(message));
    child.send('stats');
  });
}

/** CPU microseconds (user + system) a process spent between two stats answers, per event. */
function cpuPerEvent(before: Message, after: Message, events: number): number {
  const used = (cpu: NodeJS.CpuUsage) => cpu.user + (process.env.BENCH_USER_ONLY ? 0 : cpu.system);
  return (used(after.cpu!) - used(before.cpu!)) / events;
}

// ---- load ----------------------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: THROUGHPUT_CONCURRENCY });

function post(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...HEADERS, 'content-length': Buffer.byteLength(BODY) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

async function timed(url: string): Promise<number> {
  const started = process.hrtime.bigint();
  const status = await post(url);
  if (status !== 200) throw new Error(`POST ${url} answered ${status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function latency(direct: string, relayed: string) {
  for (let i = 0; i < 300; i++) {
    await timed(direct);
    await timed(relayed);
  }
  const a: number[] = [];
  const b: number[] = [];
  // Interleaved, so a noisy neighbour slows both series alike.
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    a.push(await timed(direct));
    b.push(await timed(relayed));
  }
  a.sort((x, y) => x - y);
  b.sort((x, y) => x - y);
  return { direct: { p50: percentile(a, 50), p99: percentile(a, 99) }, relay: { p50: percentile(b, 50), p99: percentile(b, 99) } };
}

interface AutocannonResult {
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}
type Autocannon = (options: { url: string; connections: number; amount: number; method: string; headers: Record<string, string>; body: string }) => Promise<AutocannonResult>;
// autocannon ships no types; its programmatic API returns a promise when given no callback.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/**
 * Events/s for `total` POSTs, THROUGHPUT_CONCURRENCY at a time. The sender is autocannon (as in
 * bench/middleware.ts): it spends about a third of node:http's client CPU per request, and on two cores
 * every microsecond the load generator uses is taken from the processes being measured.
 * BENCH_SENDER=http uses a node:http keep-alive agent instead.
 */
async function throughput(url: string, total: number): Promise<number> {
  if (process.env.BENCH_SENDER === 'http') return throughputHttp(url, total);
  const started = performance.now();
  const result = await autocannon({
    url,
    connections: THROUGHPUT_CONCURRENCY,
    amount: total,
    method: 'POST',
    headers: HEADERS, // autocannon sets Content-Length itself (and sends nothing if given one)
    body: BODY,
  });
  const seconds = (performance.now() - started) / 1000;
  const bad = result.errors + result.timeouts + result.non2xx;
  if (bad || result['2xx'] !== total) throw new Error(`${url}: ${result['2xx']} of ${total} requests got 200 (${bad} errors, timeouts or non-2xx)`);
  return total / seconds;
}

async function throughputHttp(url: string, total: number): Promise<number> {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: THROUGHPUT_CONCURRENCY }, async () => {
      while (next++ < total) if ((await post(url)) !== 200) failed++;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (failed) throw new Error(`${failed} of ${total} requests to ${url} did not get 200`);
  return total / seconds;
}

async function idleListeners(file: string) {
  const { child, first } = await spawn('relay', file);
  const relayUrl = first.url!;
  const channels = [];
  for (let i = 0; i < IDLE_LISTENERS; i += 50) {
    channels.push(...(await Promise.all(Array.from({ length: Math.min(50, IDLE_LISTENERS - i) }, () => createChannel(relayUrl)))));
  }
  const before = await ask(child);
  const sockets: WebSocket[] = [];
  const wsBase = relayUrl.replace('http', 'ws');
  for (let i = 0; i < channels.length; i += 200) {
    await Promise.all(
      channels.slice(i, i + 200).map(
        (channel) =>
          new Promise<void>((resolve, reject) => {
            const socket = new WebSocket(`${wsBase}/channels/${channel.channel}/listen`, { headers: { authorization: `Bearer ${channel.token}` }, perMessageDeflate: false });
            socket.once('message', () => resolve()); // hello: connected
            socket.once('error', reject);
            sockets.push(socket);
          }),
      ),
    );
  }
  const after = await ask(child);
  for (const socket of sockets) socket.terminate();
  child.kill();
  return { before, after };
}

// ---- main ----------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-bench-relay-'));
  const children: ChildProcess[] = [];
  try {
    const app = await spawn('app');
    // BENCH_RELAY_FILE=memory runs the relay without its data file, to see what persistence costs.
    const relay = await spawn('relay', process.env.BENCH_RELAY_FILE === 'memory' ? 'memory' : join(dir, 'relay.json'));
    children.push(app.child, relay.child);
    const appUrl = app.first.url!;
    const channel = await createChannel(relay.first.url!);
    const listener = await spawn('listener', relay.first.url!, channel.channel, channel.token, appUrl);
    children.push(listener.child);

    const lat = PARTS.has('latency') ? await latency(appUrl, channel.url) : { direct: { p50: NaN, p99: NaN }, relay: { p50: NaN, p99: NaN } };
    // Warm both paths up (JIT, keep-alive sockets) before counting CPU.
    if (!PARTS.has('latency')) for (let i = 0; i < 500; i++) await Promise.all([timed(appUrl), timed(channel.url)]);
    const runThroughput = PARTS.has('throughput');
    const appBefore = await stats(app.child);
    const directRate = runThroughput ? await throughput(appUrl, THROUGHPUT_EVENTS) : NaN;
    const appCpu = cpuPerEvent(appBefore, await stats(app.child), THROUGHPUT_EVENTS);
    const [relayBefore, listenerBefore] = await Promise.all([stats(relay.child), stats(listener.child)]);
    const relayRate = runThroughput ? await throughput(channel.url, THROUGHPUT_EVENTS) : NaN;
    const [relayAfter, listenerAfter] = await Promise.all([stats(relay.child), stats(listener.child)]);
    const relayCpu = cpuPerEvent(relayBefore, relayAfter, THROUGHPUT_EVENTS);
    const listenerCpu = cpuPerEvent(listenerBefore, listenerAfter, THROUGHPUT_EVENTS);
    for (const child of children.splice(0)) child.kill();
    const memory = PARTS.has('memory') ? await idleListeners(join(dir, 'idle.json')) : { before: process.memoryUsage(), after: process.memoryUsage() };

    const ms = (value: number) => `${value.toFixed(2)} ms`;
    const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
    const rssDelta = memory.after.rss - memory.before.rss;
    const heapDelta = memory.after.heapUsed - memory.before.heapUsed;
    const rows = [
      ['added latency p50 (relay vs direct)', `+${ms(lat.relay.p50 - lat.direct.p50)}`, `${ms(lat.relay.p50)} vs ${ms(lat.direct.p50)}`, '+<= 1 ms'],
      ['added latency p99 (relay vs direct)', `+${ms(lat.relay.p99 - lat.direct.p99)}`, `${ms(lat.relay.p99)} vs ${ms(lat.direct.p99)}`, '+<= 5 ms'],
      [
        'events/s, one relay + one listener',
        `${relayRate.toFixed(0)}/s`,
        `direct to the app: ${directRate.toFixed(0)}/s (${((relayRate / directRate) * 100).toFixed(0)}%), ${THROUGHPUT_EVENTS} events, ${THROUGHPUT_CONCURRENCY} in flight, ${process.env.BENCH_RELAY_FILE === 'memory' ? 'buffer in memory' : 'buffer persisted'}`,
        '>= 5,000/s',
      ],
      [
        'CPU per event (user + system)',
        `relay ${relayCpu.toFixed(0)} µs, listener ${listenerCpu.toFixed(0)} µs`,
        `a bare Node HTTP app on this machine: ${appCpu.toFixed(0)} µs per request; at these costs one free core carries about ${(1e6 / relayCpu).toFixed(0)}/s through the relay and ${(1e6 / listenerCpu).toFixed(0)}/s through the listener`,
        'explains the ratio',
      ],
      [
        `relay memory, ${IDLE_LISTENERS.toLocaleString('en')} idle listeners`,
        `${mib(memory.after.rss)} RSS`,
        `+${mib(rssDelta)} RSS, +${mib(heapDelta)} heap over the same relay with the channels and no listeners (${((rssDelta / IDLE_LISTENERS) / 1024).toFixed(1)} KiB each)`,
        '<= 1 GB',
      ],
    ];
    const lines = ['| measure | result | detail | target |', '|---|---|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)];
    process.stdout.write(`\n${lines.join('\n')}\n\nnode ${process.version}, ${LATENCY_SAMPLES} latency samples each way${QUICK ? ' (--quick)' : ''}\n`);
  } finally {
    for (const child of children) child.kill();
    agent.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--role');
if (at >= 0) await role(process.argv[at + 1]!, process.argv.slice(at + 2));
else await main();
