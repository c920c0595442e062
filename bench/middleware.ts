// The receiver over HTTP: requests/s of Express 5 + receiver.express() (verify, file store, dispatch)
// against a bare Express route that only reads the raw body, and against @octokit/webhooks'
// createNodeMiddleware with the same body and the same sha256 scheme; a fourth server, the receiver with a
// MemoryDeliveryStore, shows what the disk costs. Each server runs in its own child process on
// 127.0.0.1:0; autocannon loads it from this process with a fresh signature and a unique delivery id on
// every request, and reports the server's own CPU time per request, which busy neighbours disturb less.
// Issue 32: each framework adapter (Fastify, Koa, Hono) beside a bare route of its own framework.
//   node --import tsx bench/middleware.ts [--rounds 4] [--bursts 3] [--seconds 2] [--connections 64]
//     [--only receiver,bare,…,fastify-bare,fastify,koa-bare,koa,hono-bare,hono,hono-fetch]  (BENCH_PROFILE=<dir>: a CPU profile of each server process over its measured bursts)
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { eventBody, flags, intOption, median, num, ratio, table, target, windowProfiler } from './lib.js';
import { code } from './parts/code.js';
import { FRAMEWORK_KINDS, FRAMEWORK_LABELS, FRAMEWORK_PAIRS, FRAMEWORK_REFERENCE, frameworkServer, isFrameworkKind } from './parts/frameworks.js';

const SECRET = 'whsec_bench_middleware';
const PATH = '/webhooks';
const LIMIT = '256kb';
const KINDS = ['receiver', 'bare', 'octokit', 'memory', ...FRAMEWORK_KINDS] as const;
type Kind = (typeof KINDS)[number];
const LABELS: Record<Kind, string> = {
  receiver: 'Express 5 + receiver.express() (verify, FileDeliveryStore, handler)',
  bare: 'Express 5 route: raw-body, then 200',
  octokit: '@octokit/webhooks createNodeMiddleware in Express 5',
  memory: 'Express 5 + receiver.express() with MemoryDeliveryStore (no disk)',
  ...FRAMEWORK_LABELS,
};
/** The exact reply each server gives a first delivery; anything else (a duplicate, an error) is a mismatch. */
const EXPECTED_BODY = (kind: Kind): string => (kind === 'octokit' ? 'ok\n' : '{"received":true}');
const perKind = (): Record<Kind, number[]> => Object.fromEntries(KINDS.map((kind) => [kind, []])) as unknown as Record<Kind, number[]>;

// ---------------------------------------------------------------------------------------------------
// Server side: `--serve <kind>` prints {"port"}, answers each `stats` line on stdin with its counters
// (handler runs, store writes, CPU time used), and exits when stdin closes.

async function serve(kind: Kind): Promise<void> {
  if (isFrameworkKind(kind)) {
    const server = await frameworkServer(kind, { secret: SECRET, path: PATH, limit: LIMIT });
    process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
    return control(kind, () => server.handled(), () => server.writes(), () => server.close());
  }
  const { default: express } = await import('express');
  const app = express();
  let handled = 0;
  let writes = () => 0;
  let close = async () => {};

  if (kind === 'receiver' || kind === 'memory') {
    // The receiver as users run it: the built package (bench/parts/code.ts).
    const { createReceiver, FileDeliveryStore, MemoryDeliveryStore } = await code<typeof import('../src/index.js')>('index.js');
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-mw-'));
    const store = kind === 'memory' ? new MemoryDeliveryStore() : new FileDeliveryStore({ file: join(dir, 'deliveries.json') });
    const receiver = createReceiver({ secret: SECRET, store, tolerance: 300, limit: LIMIT });
    receiver.on('video.completed', async () => {
      handled++;
    });
    app.post(PATH, receiver.express());
    if (store instanceof FileDeliveryStore) writes = () => store.writes;
    close = async () => {
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    };
  } else if (kind === 'bare') {
    const { default: getRawBody } = await import('raw-body');
    app.post(PATH, async (req, res, next) => {
      try {
        await getRawBody(req, { limit: LIMIT });
        handled++;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 17 });
        res.end('{"received":true}');
      } catch (error) {
        next(error);
      }
    });
  } else {
    const { Webhooks, createNodeMiddleware } = await import('@octokit/webhooks');
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('ping', async () => {
      handled++;
    });
    app.use(createNodeMiddleware(webhooks, { path: PATH }));
  }

  const server = app.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  });
  control(
    kind,
    () => handled,
    () => writes(),
    async () => {
      server.close();
      server.closeAllConnections();
      await close();
    },
  );
}

/** Answers each `stats` line on stdin with the counters; closes the server and exits when stdin closes. */
function control(kind: Kind, handled: () => number, writes: () => number, close: () => Promise<void>): void {
  const stats = (): Stats => {
    const cpu = process.cpuUsage();
    return { handled: handled(), writes: writes(), cpuUs: cpu.user + cpu.system };
  };
  const profiler = windowProfiler(`${kind}-${process.pid}`); // a file per process: each round starts new servers
  const commands = createInterface({ input: process.stdin });
  commands.on('line', (line) => {
    // The first stats come after the warm-up: the profile covers the measured bursts (and the pauses between).
    if (line === 'stats') void profiler.start().then(() => process.stdout.write(`${JSON.stringify(stats())}\n`));
  });
  commands.on('close', async () => {
    await profiler.stop();
    await close();
    process.exit(0);
  });
}

// ---------------------------------------------------------------------------------------------------
// Load side.

interface Stats {
  handled: number;
  writes: number;
  /** CPU time (user + system) the server process used so far, in microseconds. */
  cpuUs: number;
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  non2xx: number;
  '2xx': number;
  requests: { total: number };
}
interface AutocannonRequest {
  method: string;
  path: string;
  setupRequest: (req: { headers: Record<string, string>; body?: string }) => object;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  requests: AutocannonRequest[];
  verifyBody: (body: string) => boolean;
}) => Promise<AutocannonResult>;
// autocannon ships no types; its programmatic API returns a promise when given no callback.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

let sequence = 0;

/** One request as its sender would make it: a fresh body, a fresh signature, a delivery id never used before. */
function signedRequest(kind: Kind | 'inbox', sign: (body: string, secret: string) => string) {
  return (req: { headers: Record<string, string>; body?: string }) => {
    const n = ++sequence;
    const body = eventBody(n, 450);
    const signature = sign(body, SECRET);
    const delivery = `bench-${process.pid}-${n}`;
    req.body = body;
    req.headers =
      kind === 'octokit'
        ? { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-github-delivery': delivery, 'x-hub-signature-256': signature }
        : { 'content-type': 'application/json', 'x-service-event': 'video.completed', 'x-service-delivery': delivery, 'x-service-signature': signature };
    return req;
  };
}

interface Server {
  port: number;
  child: ChildProcess;
  lines: AsyncIterator<string>;
}

async function start(kind: Kind | 'inbox'): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', kind], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error(`The ${kind} server exited before listening.`);
  return { port: (JSON.parse(first.value) as { port: number }).port, child, lines };
}

async function stats(server: Server): Promise<Stats> {
  server.child.stdin!.write('stats\n');
  const line = await server.lines.next();
  if (line.done) throw new Error('The server exited.');
  return JSON.parse(line.value) as Stats;
}

async function stop(server: Server): Promise<void> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.stdin!.end();
  await exited; // lets the child write its profile (BENCH_PROFILE)
}

async function load(kind: Kind | 'inbox', port: number, seconds: number, connections: number, expected = EXPECTED_BODY(kind as Kind)): Promise<AutocannonResult> {
  const { sign } = await code<typeof import('../src/protocol/signature.js')>('protocol/signature.js');
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [{ method: 'POST', path: PATH, setupRequest: signedRequest(kind, sign) }],
    verifyBody: (body) => body === expected,
  });
  const bad = result.errors + result.timeouts + result.mismatches + result.non2xx;
  if (bad > 0) {
    throw new Error(
      `${kind}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx, ${result.mismatches} unexpected bodies (duplicates?)`,
    );
  }
  return result;
}

async function main(): Promise<void> {
  const rounds = intOption('rounds', 'BENCH_ROUNDS', 4);
  const bursts = intOption('bursts', 'BENCH_BURSTS', 3);
  const seconds = intOption('seconds', 'BENCH_SECONDS', 2);
  const connections = intOption('connections', 'BENCH_CONNECTIONS', 64);
  const only = flags().named.get('only');
  const kinds = only ? KINDS.filter((kind) => only.split(',').includes(kind)) : KINDS;

  // Other work on the machine comes and goes, so the servers take turns in short bursts and each ratio
  // is taken between bursts that ran next to each other.
  const rps = perKind();
  const cpu = perKind();
  const perWrite: number[] = [];
  /** The load generator's CPU per request (autocannon runs in this process), per kind. */
  const loader = perKind();
  for (let round = 0; round < rounds; round++) {
    // Fresh servers (and a fresh, empty deliveries file) each round; bench/file-store.ts covers a full one.
    const servers = new Map<Kind, Server>();
    try {
      for (const kind of kinds) {
        const server = await start(kind);
        servers.set(kind, server);
        await load(kind, server.port, 1, connections); // warm-up: JIT, sockets, the store's first write
      }
      for (let burst = 0; burst < bursts; burst++) {
        for (let k = 0; k < kinds.length; k++) {
          const kind = kinds[(k + burst + round) % kinds.length]!;
          const server = servers.get(kind)!;
          const before = await stats(server);
          const own = process.cpuUsage();
          const result = await load(kind, server.port, seconds, connections);
          const used = process.cpuUsage(own);
          const after = await stats(server);
          const ok = result['2xx'];
          // A 200 must mean the handler ran for that request, so handler runs ≥ 200s. A burst ends with up to
          // `connections` requests cut off in flight (handled, never answered), and the previous burst's
          // cut-offs may finish during this one: at most 2 × connections more.
          const runs = after.handled - before.handled;
          if (runs < ok || runs > ok + 2 * connections) {
            throw new Error(`${kind}: ${ok} replies of 200 but the handler ran ${runs} times.`);
          }
          rps[kind].push(ok / result.duration);
          cpu[kind].push((after.cpuUs - before.cpuUs) / ok);
          loader[kind].push((used.user + used.system) / ok);
          if (kind === 'receiver') perWrite.push(ok / (after.writes - before.writes));
        }
      }
    } finally {
      for (const server of servers.values()) await stop(server).catch(() => server.child.kill());
    }
  }

  const summary = (kind: Kind) => num(median(rps[kind]));
  const paired = (kind: Kind) => median(rps.receiver.map((value, i) => value / rps[kind][i]!));
  console.log(
    `${rounds} rounds × ${bursts} interleaved bursts of ${seconds} s per server, ${connections} connections, autocannon in ` +
      `another process. Medians; each ratio is taken between adjacent bursts.\n`,
  );
  console.log(
    table(
      ['server', 'requests/s', 'receiver ÷ this', 'server CPU µs/request'],
      kinds.map((kind) => [
        LABELS[kind],
        summary(kind),
        kind === 'receiver' || isFrameworkKind(kind) || !rps.receiver.length ? '–' : ratio(paired(kind), 1),
        num(median(cpu[kind])),
      ]),
    ),
  );
  console.log('');
  console.log(
    'Each request carried a new delivery id, event id and signature; each reply was checked to be a 200 first ' +
      'delivery, and the handler count to match the 200s (no duplicates, no errors).' +
      (perWrite.length ? ` The file store wrote once per ${num(median(perWrite))} requests (group commit).` : ''),
  );
  frameworkSummary(rps);
  // Issue 30 follow-up item 4: an adapter run alone (`--only fastify-bare,fastify`) prints the receiver's own cost too.
  if (FRAMEWORK_PAIRS.some(([adapter]) => rps[adapter].length) && !(rps.receiver.length && rps.bare.length && rps.octokit.length)) {
    console.log('');
    console.log(`receive() alone (verify, event key, MemoryDeliveryStore, one handler), in process on 20,000 requests: ${num(await receiveAlone())} µs of CPU per request.`);
  }
  if (rps.receiver.length && rps.bare.length && rps.octokit.length) {
    const vsBare = paired('bare');
    const vsOctokit = paired('octokit');
    console.log('');
    // With the cores as busy either way, receiver ÷ bare = (bare + loader) ÷ (bare + loader + extra): the
    // target leaves the receiver 1/0.95 - 1 of (bare + loader) for its own work, which the receiver's
    // receive() alone, run in process on the same kind of request, is set against.
    const budget = (median(cpu.bare) + median(loader.bare)) * (1 / 0.95 - 1);
    const own = await receiveAlone();
    console.log(
      `The load generator (autocannon, in this process, making a signature per request) used ${num(median(loader.bare))} µs of CPU per request. ` +
        `With the cores as busy either way, the 0.95× target leaves the receiver ${num(budget)} µs per request over bare Express ` +
        `(5.3 % of bare Express's ${num(median(cpu.bare))} µs plus the generator's); receive() alone (verify, event key, MemoryDeliveryStore, one handler), ` +
        `in process on 20,000 such requests, costs ${num(own)} µs.`,
    );
    console.log('');
    console.log(target(`receiver ≥ 0.95× bare Express (${vsBare.toFixed(2)}×)`, vsBare >= 0.95));
    console.log(target(`receiver ≥ 1.0× octokit (${vsOctokit.toFixed(2)}×)`, vsOctokit >= 1));
  }
  if (!only || only.split(',').includes('inbox')) await inboxCase(rounds, bursts, seconds, connections);
}

/** Issue 32: each adapter against its own framework's bare route, paired burst by burst (target ≥ 0.9×). */
function frameworkSummary(rps: Record<Kind, number[]>): void {
  const pairs = FRAMEWORK_PAIRS.filter(([adapter, bare]) => rps[adapter].length && rps[bare].length);
  if (!pairs.length) return;
  const ratios = pairs.map(([adapter, bare]) => median(rps[adapter].map((value, i) => value / rps[bare][i]!)));
  console.log('');
  console.log(
    table(
      ['adapter', 'its bare route, requests/s', 'adapter, requests/s', 'adapter ÷ bare'],
      pairs.map(([adapter, bare], i) => [LABELS[adapter], num(median(rps[bare])), num(median(rps[adapter])), ratio(ratios[i]!, 1)]),
    ),
  );
  console.log('');
  for (const [i, [adapter]] of pairs.entries()) {
    if (FRAMEWORK_REFERENCE.includes(adapter)) console.log(`- ${adapter}: ${ratios[i]!.toFixed(2)}× its framework's bare route (for reference, no target)`);
    else console.log(target(`${adapter} ≥ 0.9× its framework's bare route (${ratios[i]!.toFixed(2)}×)`, ratios[i]! >= 0.9));
  }
}

/** CPU µs per request of `receiver.receive()` alone, in this process: signed requests as `load` sends them, each new. */
async function receiveAlone(count = 20_000): Promise<number> {
  const { createReceiver, MemoryDeliveryStore } = await code<typeof import('../src/index.js')>('index.js');
  const { sign } = await code<typeof import('../src/protocol/signature.js')>('protocol/signature.js');
  const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), tolerance: 300, limit: LIMIT });
  let handled = 0;
  receiver.on('video.completed', async () => {
    handled++;
  });
  const requests = Array.from({ length: 2 * count }, (_, i) => {
    const body = eventBody(1_000_000 + i, 450);
    const fields = new Map([
      ['content-type', 'application/json'],
      ['x-service-event', 'video.completed'],
      ['x-service-delivery', `alone-${process.pid}-${i}`],
      ['x-service-signature', sign(body, SECRET)],
    ]);
    return { body: Buffer.from(body), headers: { get: (name: string) => fields.get(name) ?? null } };
  });
  const run = async (from: number) => {
    for (let i = from; i < from + count; i++) {
      const reply = await receiver.receive(requests[i]!.body, requests[i]!.headers);
      if (reply.status !== 200) throw new Error(`receive() answered ${reply.status}: ${reply.body}`);
    }
  };
  await run(0); // warm-up: JIT
  const before = process.cpuUsage();
  await run(count);
  const used = process.cpuUsage(before);
  if (handled !== 2 * count) throw new Error(`The handler ran ${handled} times for ${2 * count} requests.`);
  return (used.user + used.system) / count;
}

const serveKind = flags().named.get('serve');
if (serveKind === 'inbox') {
  await serveInbox();
} else if (flags().named.has('inbox-only')) {
  await inboxCase(intOption('rounds', 'BENCH_ROUNDS', 4), intOption('bursts', 'BENCH_BURSTS', 3), intOption('seconds', 'BENCH_SECONDS', 2), intOption('connections', 'BENCH_CONNECTIONS', 64));
} else if (serveKind !== undefined) {
  if (!(KINDS as readonly string[]).includes(serveKind)) throw new TypeError(`Unknown --serve ${serveKind}.`);
  await serve(serveKind as Kind);
} else {
  await main();
}

// ---------------------------------------------------------------------------------------------------
// Issue 30 item 4: the receiver with a durable file inbox (202 once the event is on disk, the handler
// after) against the same receiver without one (200 once the handler ran), in the same run; and the
// handler's latency from the request's arrival. Run alone: `node --import tsx bench/middleware.ts --inbox-only`.

// (Constants live inside the functions: the dispatch above runs before this part of the module is evaluated.)

async function serveInbox(): Promise<void> {
  /** Latencies kept at most (a ring): the server's memory stays bounded however long it runs. */
  const LATENCY_SAMPLES = 200_000;
  const { default: express } = await import('express');
  const { createReceiver, FileDeliveryStore } = await code<typeof import('../src/index.js')>('index.js');
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-inbox-'));
  const store = new FileDeliveryStore({ file: join(dir, 'deliveries.json') });
  const receiver = createReceiver({ secret: SECRET, store, tolerance: 300, limit: LIMIT, inbox: { file: join(dir, 'inbox.json'), maxPending: 1_000_000, maxPendingBytes: '1gb' } });
  let handled = 0;
  const latencies = new Float64Array(LATENCY_SAMPLES);
  receiver.on('video.completed', async (_event, { receivedAt }) => {
    latencies[handled++ % LATENCY_SAMPLES] = Date.now() - receivedAt.getTime();
  });
  const app = express();
  app.post(PATH, receiver.express());
  const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
  let from = 0;
  const commands = createInterface({ input: process.stdin });
  commands.on('line', (line) => {
    if (line === 'mark') return void (from = handled);
    const cpu = process.cpuUsage();
    // `latency`: the handler runs since the last `mark` (the last LATENCY_SAMPLES of them), as [p50, p99] in ms.
    const recent: number[] = [];
    for (let i = Math.max(from, handled - LATENCY_SAMPLES); i < handled; i++) recent.push(latencies[i % LATENCY_SAMPLES]!);
    recent.sort((a, b) => a - b);
    const at = (q: number) => recent[Math.min(recent.length - 1, Math.floor(q * recent.length))] ?? 0;
    if (line === 'stats') process.stdout.write(`${JSON.stringify({ handled, writes: store.writes, cpuUs: cpu.user + cpu.system, latency: [at(0.5), at(0.99)] })}\n`);
  });
  commands.on('close', async () => {
    server.close();
    server.closeAllConnections();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

async function inboxCase(rounds: number, bursts: number, seconds: number, connections: number): Promise<void> {
  const INBOX_BODY = '{"received":true,"queued":true}';
  const rps = { receiver: [] as number[], inbox: [] as number[] };
  const cpu = { receiver: [] as number[], inbox: [] as number[] };
  const p50: number[] = [];
  const p99: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const servers = { receiver: await start('receiver'), inbox: await start('inbox') };
    try {
      await load('receiver', servers.receiver.port, 1, connections);
      await load('inbox', servers.inbox.port, 1, connections, INBOX_BODY);
      await drained(servers.inbox);
      for (let burst = 0; burst < bursts; burst++) {
        for (const kind of (burst + round) % 2 ? (['inbox', 'receiver'] as const) : (['receiver', 'inbox'] as const)) {
          const server = servers[kind];
          if (kind === 'inbox') server.child.stdin!.write('mark\n');
          const before = await stats(server);
          const result = await load(kind, server.port, seconds, connections, kind === 'inbox' ? INBOX_BODY : EXPECTED_BODY('receiver'));
          // The inbox's handlers catch up after the burst: its CPU counts them too, and the latency is theirs.
          const after = kind === 'inbox' ? await drained(server) : await stats(server);
          rps[kind].push(result['2xx'] / result.duration);
          cpu[kind].push((after.cpuUs - before.cpuUs) / result['2xx']);
          if (kind === 'inbox') {
            const { latency } = after as Stats & { latency: [number, number] };
            p50.push(latency[0]);
            p99.push(latency[1]);
          }
        }
      }
    } finally {
      for (const server of Object.values(servers)) await stop(server).catch(() => server.child.kill());
    }
  }
  const paired = median(rps.inbox.map((value, i) => value / rps.receiver[i]!));
  console.log('');
  console.log(`The durable inbox (issue 30): ${rounds} rounds × ${bursts} interleaved bursts of ${seconds} s, ${connections} connections.\n`);
  console.log(
    table(
      ['server', 'requests/s', 'this ÷ receiver', 'server CPU µs/request (handler included)'],
      [
        [LABELS.receiver, num(median(rps.receiver)), '–', num(median(cpu.receiver))],
        ['the same with inbox: true (202 once on disk, handler from the inbox)', num(median(rps.inbox)), ratio(paired, 1), num(median(cpu.inbox))],
      ],
    ),
  );
  console.log('');
  console.log(`Handler latency from arrival under that load (inbox): median of the bursts' p50 ${num(median(p50))} ms, of their p99 ${num(median(p99))} ms.`);
  console.log(target(`inbox ≥ 0.8× the receiver without it (${paired.toFixed(2)}×)`, paired >= 0.8));
}

/** Waits until the inbox server's handlers have run every event it took (the queue is empty), then its stats. */
async function drained(server: Server): Promise<Stats> {
  let last = await stats(server);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const now = await stats(server);
    if (now.handled === last.handled) return now;
    last = now;
  }
}
