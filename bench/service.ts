// Issue 11's benchmark: the simulated service over HTTP on its file store. (1) POST /v1/videos and
// GET /v1/videos/{id} requests/s and p99 latency of `createServiceApp` on node:http, each against a bare
// Express 5 route in the same run that does the same persistence (POST: express.json(), one record appended
// to a JournalFile, the group-commit journal the service store uses, 202 once the commit resolves; GET: a
// record from a Map sent as JSON). Each server runs in its own child process on 127.0.0.1:0; autocannon
// loads it from this process in interleaved bursts, and the server's own CPU per request is read with
// process.cpuUsage. (2) Memory of a fresh service holding 100,000 clips, its data file, and the time a
// fresh process takes to load that file.
//   node --import tsx bench/service.ts [--quick] [--rounds 5] [--seconds 3] [--connections 64] [--clips 100000] [--only POST|GET]
// BENCH_PROFILE=<dir>: each server child runs with --cpu-prof and writes <dir>/<kind>.cpuprofile (warm-up
// included) when the bench closes it; `--only POST` (or GET) loads one request only and skips the memory part,
// so a profile shows that request alone. Read it with `node --import tsx bench/top-frames.ts <file>`.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { flags, intOption, median, num, table, target } from './lib.js';
import { code } from './parts/code.js';

const QUICK = process.argv.includes('--quick');
const PROFILE = process.env.BENCH_PROFILE;
const KINDS = ['service', 'bare'] as const;
type Kind = (typeof KINDS)[number];
const ALL_METHODS = ['POST', 'GET'] as const;
type Method = (typeof ALL_METHODS)[number];
const ONLY = flags().named.get('only');
if (ONLY !== undefined && !(ALL_METHODS as readonly string[]).includes(ONLY)) throw new TypeError(`Expected --only POST or GET, got ${ONLY}.`);
/** The requests measured: both, or the one `--only` names. */
const METHODS: readonly Method[] = ONLY ? [ONLY as Method] : ALL_METHODS;
const LABELS: Record<Kind, string> = {
  service: 'cliphook service (createServiceApp on node:http, file store)',
  bare: 'bare Express 5 route, same JournalFile',
};
const PROMPT = 'a red fox running through fresh snow at dawn, cinematic, slow motion';
const POST_BODY = JSON.stringify({ prompt: PROMPT, duration: 5 });
/** GET cycles through this many of the clips made during the warm-up. */
const GET_IDS = 1000;
/** The simulated clock of the memory part: frozen at this instant in both of its processes. */
const FROZEN_AT = Date.parse('2026-01-01T00:00:00Z');

// ---------------------------------------------------------------------------------------------------
// Server side: `--serve <kind> <dir>` prints {"port","apiKey"}, answers each `stats` line on stdin with
// its counters, and exits when stdin closes.

interface Stats {
  /** CPU time (user + system) the server process used so far, in microseconds. */
  cpuUs: number;
  /** Clips (service) or records (bare) stored. */
  records: number;
  /** Clips still pending or generating: their transitions are still to be written. */
  inFlight: number;
}

async function serve(kind: Kind, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  let handler: RequestListener;
  let apiKey = '';
  let counts = (): Omit<Stats, 'cpuUs'> => ({ records: 0, inFlight: 0 });
  let close = async () => {};

  if (kind === 'service') {
    const { createServiceApp } = await code<typeof import('../src/service/http/app.js')>('service/http/app.js');
    const app = await createServiceApp({ file: join(dir, 'service.json'), speed: 'fast', rateLimitPerMinute: 1e9, balance: 1e12, warn: () => undefined });
    apiKey = app.service.first().apiKey;
    handler = app;
    const videos = app.service.store.table('video');
    counts = () => {
      let inFlight = 0;
      for (const video of videos.values()) if (video.status === 'pending' || video.status === 'generating') inFlight++;
      return { records: videos.size, inFlight };
    };
    close = () => app.close();
  } else {
    const { default: express } = await import('express');
    const { JournalFile } = await code<typeof import('../src/store/journal-file.js')>('store/journal-file.js');
    interface Snapshot {
      version: 1;
      records: Record<string, unknown>[];
    }
    const records = new Map<number, Record<string, unknown>>();
    const journal = new JournalFile<Snapshot, [id: number, record: Record<string, unknown>]>({
      file: join(dir, 'bare.json'),
      snapshot: () => ({ version: 1, records: [...records.values()] }),
      sizeOf: (snapshot) => snapshot.records?.length ?? 0,
    });
    await journal.read();
    let nextId = 1;
    const app = express();
    app.use(express.json());
    app.post('/v1/videos', async (req, res, next) => {
      try {
        const { prompt, duration } = req.body as { prompt?: unknown; duration?: unknown };
        if (typeof prompt !== 'string' || typeof duration !== 'number') {
          res.status(400).json({ code: 'invalid_parameter' });
          return;
        }
        const id = nextId++;
        // A record of the shape and size of the service's 202 answer, which GET sends back as it is.
        const record = {
          id, status: 'pending', credits_used: 9, duration, ratio: '16:9', model: 'standard', prompt, image_urls: [], asset_ids_used: null,
          asset_source: 'none', subject_consent: null, callback_url: null, callback_enabled: false, estimated_time_seconds: 4,
          created_at: new Date().toISOString(), poll_url: `http://127.0.0.1:8080/v1/videos/${id}`, warnings: [],
        };
        records.set(id, record);
        journal.append([id, record]);
        await journal.commit();
        res.status(202).json(record);
      } catch (error) {
        next(error);
      }
    });
    app.get('/v1/videos/:id', (req, res) => {
      const record = records.get(Number(req.params.id));
      if (record) res.json(record);
      else res.status(404).json({ code: 'not_found' });
    });
    handler = app;
    counts = () => ({ records: records.size, inFlight: 0 });
    close = () => journal.close();
  }

  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port, apiKey })}\n`);
  // CPU µs the counts below took so far, subtracted from the CPU time each answer reports.
  let countsCpuUs = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'stats') {
      const cpu = process.cpuUsage();
      const cpuUs = cpu.user + cpu.system - countsCpuUs;
      const counted = counts();
      // The count walks every stored clip (tens of thousands by the last round) and `drain` asks for it every
      // 250 ms: the bench's own work, so its CPU is left out of the server's (it was ~10 % of the service's).
      const after = process.cpuUsage();
      countsCpuUs += after.user + after.system - cpu.user - cpu.system;
      process.stdout.write(`${JSON.stringify({ cpuUs, ...counted } satisfies Stats)}\n`);
    }
  }
  server.closeAllConnections();
  server.close();
  await close();
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------------
// Memory: `--memory <dir> <count>` fills a fresh service in-process; `--reopen <dir> <count>` loads its file.

interface Memory {
  heapUsed: number;
  rss: number;
}

function measure(): Memory {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('Run the memory children with --expose-gc.');
  gc();
  gc();
  const usage = process.memoryUsage();
  return { heapUsed: usage.heapUsed, rss: usage.rss };
}

/** Imports the service's modules first, so the time to open measures loading the file, not loading code. */
async function serviceOpener() {
  const { Service } = await code<typeof import('../src/service/service.js')>('service/service.js');
  const { SimulatedClock } = await code<typeof import('../src/service/core/clock.js')>('service/core/clock.js');
  return (dir: string, balance?: number) => {
    // Frozen: the clips stay pending (each with its plan and a timer on the clock), and the reopened
    // service, frozen at the same instant, finds none of them due.
    const clock = new SimulatedClock({ frozen: true, start: FROZEN_AT });
    return Service.open({ file: join(dir, 'service.json'), clock, speed: 'fast', rateLimitPerMinute: 1e9, ...(balance ? { balance } : {}), warn: () => undefined });
  };
}

async function fill(dir: string, count: number): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const { VideoRequest } = await code<typeof import('../src/service/contract/videos.js')>('service/contract/videos.js');
  const openService = await serviceOpener();
  const service = await openService(dir, 1e12);
  const { caller } = await service.gate.admit(service.gate.identify(`Bearer ${service.first().apiKey}`));
  // The command a POST /v1/videos runs, in one unit of the store, without the HTTP around it.
  const createVideo = (body: unknown) => service.store.unit(() => service.videos.create(caller, service.videos.command(caller, VideoRequest.parse(body))));
  const before = measure();
  const started = performance.now();
  const BATCH = 1000;
  for (let i = 0; i < count; i += BATCH) {
    const batch: Promise<unknown>[] = [];
    // Each clip gets its own body, parsed as the HTTP route would, so no two share a prompt string.
    for (let j = i; j < Math.min(count, i + BATCH); j++) batch.push(createVideo(JSON.parse(`{"prompt":"${PROMPT}, take ${j}","duration":5}`)));
    await Promise.all(batch);
  }
  const createSeconds = (performance.now() - started) / 1000;
  const after = measure();
  const stored = service.store.table('video').size;
  const pending = [...service.store.table('video').values()].filter((video) => video.status === 'pending').length;
  const closeStarted = performance.now();
  await service.close();
  const closeSeconds = (performance.now() - closeStarted) / 1000;
  const fileBytes = statSync(join(dir, 'service.json')).size;
  process.stdout.write(`${JSON.stringify({ before, after, stored, pending, createSeconds, closeSeconds, fileBytes })}\n`);
}

async function reopen(dir: string, count: number): Promise<void> {
  const openService = await serviceOpener();
  const empty = measure();
  const started = performance.now();
  const service = await openService(dir);
  const loadSeconds = (performance.now() - started) / 1000;
  const loaded = measure();
  const stored = service.store.table('video').size;
  if (stored !== count) throw new Error(`The reopened service holds ${stored} clips, not ${count}.`);
  const pending = [...service.store.table('video').values()].filter((video) => video.status === 'pending').length;
  await service.close();
  process.stdout.write(`${JSON.stringify({ empty, loaded, loadSeconds, stored, pending })}\n`);
}

// ---------------------------------------------------------------------------------------------------
// Load side.

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  latency: { p50: number; p99: number };
}
interface AutocannonRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: { path: string }) => object;
}
type Autocannon = (options: { url: string; connections: number; duration: number; requests: AutocannonRequest[] }) => Promise<AutocannonResult>;
// autocannon ships no types; its programmatic API returns a promise when given no callback.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

interface Server {
  kind: Kind;
  port: number;
  apiKey: string;
  child: ChildProcess;
  lines: AsyncIterator<string>;
  /** Ids GET cycles through. */
  ids: number[];
}

function child(args: string[], node: string[] = []): { child: ChildProcess; lines: AsyncIterator<string> } {
  const proc = spawn(process.execPath, [...node, '--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return { child: proc, lines: createInterface({ input: proc.stdout! })[Symbol.asyncIterator]() };
}

async function nextLine(lines: AsyncIterator<string>, what: string): Promise<string> {
  const line = await lines.next();
  if (line.done) throw new Error(`${what} exited without an answer.`);
  return line.value;
}

async function start(kind: Kind, dir: string): Promise<Server> {
  // The profile is written when the child exits normally: `stop` ends its stdin and it calls process.exit(0).
  // Node's own names, in a folder of the kind's: tsx's loader thread writes a profile too (see `stop`).
  const profile = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, `${kind}-raw`)}`, '--cpu-prof-interval=250'] : [];
  const { child: proc, lines } = child(['--serve', kind, join(dir, kind)], profile);
  const first = JSON.parse(await nextLine(lines, `The ${kind} server`)) as { port: number; apiKey: string };
  return { kind, ...first, child: proc, lines, ids: [] };
}

async function stats(server: Server): Promise<Stats> {
  server.child.stdin!.write('stats\n');
  return JSON.parse(await nextLine(server.lines, `The ${server.kind} server`)) as Stats;
}

async function stop(server: Server): Promise<void> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.stdin!.end();
  await exited;
  if (PROFILE) keepMainProfile(server);
}

/** Keeps the main thread's profile as `<kind>.cpuprofile` (Node names it CPU.<date>.<time>.<pid>.0.<n>). */
function keepMainProfile(server: Server): void {
  const raw = join(PROFILE!, `${server.kind}-raw`);
  const main = readdirSync(raw).find((name) => name.includes(`.${server.child.pid}.0.`));
  if (!main) throw new Error(`No main-thread profile of the ${server.kind} server in ${raw}.`);
  renameSync(join(raw, main), join(PROFILE!, `${server.kind}.cpuprofile`));
  rmSync(raw, { recursive: true, force: true });
}

/** Waits (bounded) until the service has written the later transitions of every clip it took. */
async function drain(server: Server): Promise<Stats> {
  const giveUp = Date.now() + 12_000;
  for (;;) {
    const now = await stats(server);
    if (now.inFlight === 0) return now;
    if (Date.now() > giveUp) {
      console.error(`service: ${now.inFlight} clips still in flight after 12 s; going on.`);
      return now;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function load(server: Server, method: Method, seconds: number, connections: number): Promise<AutocannonResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${server.apiKey}` };
  let request: AutocannonRequest;
  if (method === 'POST') {
    request = { method, path: '/v1/videos', headers: { ...headers, 'content-type': 'application/json' }, body: POST_BODY };
  } else {
    let n = 0;
    const ids = server.ids;
    request = {
      method,
      path: `/v1/videos/${ids[0]}`,
      headers,
      setupRequest: (req) => {
        req.path = `/v1/videos/${ids[n++ % ids.length]}`;
        return req;
      },
    };
  }
  const result = await autocannon({ url: `http://127.0.0.1:${server.port}`, connections, duration: seconds, requests: [request] });
  const bad = result.errors + result.timeouts + result.non2xx;
  if (bad > 0) throw new Error(`${server.kind} ${method}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx replies`);
  return result;
}

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
}

async function burst(server: Server, method: Method, seconds: number, connections: number): Promise<Sample> {
  const before = await stats(server);
  const result = await load(server, method, seconds, connections);
  // A POST to the service starts a clip whose two later transitions are journalled within ~5.5 s: they are
  // part of its cost, and must not run during the next server's burst.
  const after = server.kind === 'service' && method === 'POST' ? await drain(server) : await stats(server);
  const ok = result['2xx'];
  if (method === 'POST') {
    // A 202 means a stored record; a burst ends with up to `connections` requests cut off in flight.
    const stored = after.records - before.records;
    if (stored < ok || stored > ok + 2 * connections) throw new Error(`${server.kind}: ${ok} replies of 202 but ${stored} new records.`);
  }
  return { rps: ok / result.duration, p50: result.latency.p50, p99: result.latency.p99, cpuUs: (after.cpuUs - before.cpuUs) / ok };
}

async function http(dir: string): Promise<string> {
  const rounds = intOption('rounds', 'BENCH_ROUNDS', QUICK ? 1 : 5);
  const seconds = intOption('seconds', 'BENCH_SECONDS', QUICK ? 1 : 3);
  const connections = intOption('connections', 'BENCH_CONNECTIONS', 64);
  const servers = {} as Record<Kind, Server>;
  const samples: Record<Method, Record<Kind, Sample[]>> = { POST: { service: [], bare: [] }, GET: { service: [], bare: [] } };
  try {
    for (const kind of KINDS) servers[kind] = await start(kind, dir);
    // Warm-up: JIT, sockets, the journals' first writes; the clips made here are the ones GET reads.
    for (const kind of KINDS) {
      const server = servers[kind];
      await load(server, 'POST', 1, connections);
      const { records } = server.kind === 'service' ? await drain(server) : await stats(server);
      server.ids = Array.from({ length: Math.min(GET_IDS, records) }, (_, i) => i + 1);
      if (METHODS.includes('GET')) await load(server, 'GET', 1, connections);
    }
    // Other work on the machine comes and goes, so the servers take turns, the first one alternating, and
    // each ratio is taken between bursts that ran next to each other.
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? KINDS : ([...KINDS].reverse() as Kind[]);
      for (const method of METHODS) for (const kind of order) samples[method][kind].push(await burst(servers[kind], method, seconds, connections));
    }
  } finally {
    for (const server of Object.values(servers)) await stop(server).catch(() => server.child.kill());
  }

  const paired = (method: Method) => median(samples[method].service.map((sample, i) => sample.rps / samples[method].bare[i]!.rps));
  const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;
  const rows = METHODS.flatMap((method) =>
    KINDS.map((kind) => {
      const list = samples[method][kind];
      return [
        `${method} /v1/videos${method === 'GET' ? '/{id}' : ''}`,
        LABELS[kind],
        num(median(list.map((s) => s.rps))),
        ms(median(list.map((s) => s.p50))),
        ms(median(list.map((s) => s.p99))),
        num(median(list.map((s) => s.cpuUs))),
        kind === 'service' ? `${paired(method).toFixed(2)}×` : '1.00×',
      ];
    }),
  );
  const cpuOf = (method: Method) => median(samples[method].service.map((sample) => sample.cpuUs));
  // Each burst's CPU per request, so the spread of the medians above can be read (the machine is shared).
  const spread = METHODS.map((method) =>
    `- ${method} CPU µs/request by round: ` + KINDS.map((kind) => `${kind} ${samples[method][kind].map((s) => s.cpuUs.toFixed(0)).join(', ')}`).join('; '),
  );
  const targets = METHODS.flatMap((method) => {
    const value = paired(method);
    // Issue 11's floors, then issue 31's targets for the same ratio.
    const [floor, goal] = method === 'GET' ? [0.7, 1.6] : [0.5, 1.3];
    return [target(`${method} ≥ ${floor}× bare (${value.toFixed(2)}×)`, value >= floor), target(`issue 31: ${method} ≥ ${goal}× bare (${value.toFixed(2)}×)`, value >= goal)];
  });
  return [
    `${rounds} rounds × 1 burst of ${seconds} s per server and request, interleaved (the first server alternating), ${connections} connections, ` +
      'autocannon in another process; both servers keep their data for the whole run. Medians; each ratio is the median of ratios between adjacent bursts.',
    '',
    table(['request', 'server', 'requests/s', 'p50', 'p99', 'server CPU µs/request', 'service ÷ bare'], rows),
    '',
    `POST sends \`${POST_BODY}\` with the bearer key; every answer was checked to be a 202 and to have stored a record. ` +
      `The service's POST CPU includes each clip's two later transitions (generating, done: two more journal lines), counted until none was in flight; ` +
      `the bare route stores one record of the size of the service's 202 answer. GET cycles through ${GET_IDS} stored clips (all done in the service, ` +
      'whose answer signs two media links; the bare route sends the stored record with `res.json`).',
    '',
    ...spread,
    '',
    ...targets,
    ...(ONLY ? [] : ['', await validationCost(cpuOf('POST'), cpuOf('GET'))]),
  ].join('\n');
}

/**
 * What the contract's checks cost per request (issue 21): the POST body through `VideoRequest` (zod: every
 * field's rule, the aliases, the spanning rules) and the GET path through `VideoPath`, timed in this process
 * over many calls, against the service's whole CPU per request measured above.
 */
async function validationCost(postCpuUs: number, getCpuUs: number): Promise<string> {
  const { VideoRequest, VideoPath } = await code<typeof import('../src/service/contract/videos.js')>('service/contract/videos.js');
  const body = JSON.parse(POST_BODY) as unknown;
  const time = (run: () => unknown) => {
    for (let i = 0; i < 20_000; i++) run();
    const n = 200_000;
    const started = process.cpuUsage();
    for (let i = 0; i < n; i++) run();
    const used = process.cpuUsage(started);
    return (used.user + used.system) / n;
  };
  const postUs = time(() => VideoRequest.parse(body));
  const getUs = time(() => VideoPath.parse({ id: '123' }));
  return [
    'Validation by the contract, per request (in this process, 200,000 calls after a warm-up):',
    '',
    table(['request', 'schema', 'CPU µs', 'share of the service CPU per request above'], [
      ['POST /v1/videos', 'VideoRequest (fields, aliases, model ↔ duration)', postUs.toFixed(2), `${((postUs / postCpuUs) * 100).toFixed(1)}%`],
      ['GET /v1/videos/{id}', 'VideoPath (the id)', getUs.toFixed(2), `${((getUs / getCpuUs) * 100).toFixed(1)}%`],
    ]),
  ].join('\n');
}

async function memory(dir: string): Promise<string> {
  const count = intOption('clips', 'BENCH_CLIPS', QUICK ? 2000 : 100_000);
  const folder = join(dir, 'memory');
  const filled = child(['--memory', folder, String(count)], ['--expose-gc']);
  const a = JSON.parse(await nextLine(filled.lines, 'The memory process')) as {
    before: Memory; after: Memory; stored: number; pending: number; createSeconds: number; closeSeconds: number; fileBytes: number;
  };
  await new Promise((resolve) => (filled.child.exitCode === null ? filled.child.once('exit', resolve) : resolve(null)));
  const reopened = child(['--reopen', folder, String(count)], ['--expose-gc']);
  const b = JSON.parse(await nextLine(reopened.lines, 'The reopening process')) as { empty: Memory; loaded: Memory; loadSeconds: number; stored: number; pending: number };
  await new Promise((resolve) => (reopened.child.exitCode === null ? reopened.child.once('exit', resolve) : resolve(null)));
  const mib = (bytes: number) => `${num(bytes / 1024 / 1024)} MiB`;
  return [
    `Memory with ${num(count)} stored clips: a fresh service (file store) in its own process, clips made with \`createVideo\` 1,000 at a time ` +
      `(${num(count / a.createSeconds)} clips/s in-process), on a frozen clock so they all stay pending, each with its plan and a timer; heap after \`gc()\`.`,
    '',
    table(['measure', 'value'], [
      ['clips stored (pending)', `${num(a.stored)} (${num(a.pending)})`],
      ['heap used: empty service → with the clips', `${mib(a.before.heapUsed)} → ${mib(a.after.heapUsed)}`],
      ['RSS: empty service → with the clips', `${mib(a.before.rss)} → ${mib(a.after.rss)}`],
      ['heap bytes per stored clip', num((a.after.heapUsed - a.before.heapUsed) / count)],
      ['RSS bytes per stored clip', num((a.after.rss - a.before.rss) / count)],
      ['data file (snapshot written at close)', `${mib(a.fileBytes)} (${num(a.fileBytes / count)} B per clip; close took ${num(a.closeSeconds)} s)`],
      ['start-up load of that file in a fresh process (`Service.open`)', `${num(b.loadSeconds * 1000)} ms`],
      ['heap used / RSS after that load', `${mib(b.loaded.heapUsed)} / ${mib(b.loaded.rss)} (${mib(b.empty.heapUsed)} / ${mib(b.empty.rss)} before, code loaded)`],
    ]),
  ].join('\n');
}

const named = flags().named;
const positional = flags().positional;
if (named.has('serve')) {
  const kind = named.get('serve')!;
  if (!(KINDS as readonly string[]).includes(kind)) throw new TypeError(`Unknown --serve ${kind}.`);
  await serve(kind as Kind, positional[0]!);
} else if (named.has('memory')) {
  await fill(named.get('memory')!, Number(positional[0]));
  process.exit(0);
} else if (named.has('reopen')) {
  await reopen(named.get('reopen')!, Number(positional[0]));
  process.exit(0);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-service-'));
  try {
    const started = performance.now();
    const httpPart = await http(dir);
    // `--only` measures one request (a profile of it alone): the memory part is left out.
    const memoryPart = ONLY ? '' : `${await memory(dir)}\n\n`;
    console.log(`${httpPart}\n\n${memoryPart}node ${process.version}${QUICK ? ' (--quick)' : ''}, ${num((performance.now() - started) / 1000)} s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
