/**
 * The relay on Redis (issue 13). Run: `node --import tsx bench/relay-redis.ts [--events 8000] [--rounds 3]`.
 *
 * Events/s sent by autocannon (64 in flight) through a relay to `listen` and a local app answering 200, in
 * three set-ups measured in the same run, interleaved round by round:
 *   - one relay process on its data file (the default; the baseline);
 *   - one relay process on Redis, sender and listener on it: what the store costs;
 *   - two relay processes on one Redis, the sender to A and the listener on B: what scale-out costs (the
 *     event goes A → Redis → B → listener, the reply B → Redis → A).
 * The private redis-server (127.0.0.1, a free port, never 6379) runs with `appendonly yes` and
 * `appendfsync everysec`: written to the OS before each reply, as the data file is (neither fsyncs per
 * event). Every request carries its own X-Service-Delivery. Each part is a process of its own; CPU per
 * event counts the relay processes and redis-server. Figures from a shared 2-core machine: read the ratios.
 */
import { fork, spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { intOption, median, num, ratio, table } from './lib.js';
import { sendAmount } from './parts/amount.js';
import { code } from './parts/code.js';

// The relay and listener as users run them: the built package (bench/parts/code.ts).
const { connectListener, createChannel, createRelayServer, sign } = await code<typeof import('../src/index.js')>('index.js');

const EVENTS = intOption('events', 'BENCH_EVENTS', 8_000);
const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 3);
const CONCURRENCY = 64;
const BODY = JSON.stringify({ event: 'video.completed', id: 48213, status: 'done', prompt: 'A red fox trotting through fresh snow'.repeat(12) });
const SIGNATURE = sign(BODY, 'whsec_bench');

type Message = { url?: string; cpu?: NodeJS.CpuUsage; ready?: boolean };

// ---- child roles ---------------------------------------------------------------------------------

async function role(name: string, args: string[]): Promise<void> {
  process.on('SIGTERM', () => process.exit(0));
  const send = (message: Message) => process.send!(message);
  process.on('message', () => send({ cpu: process.cpuUsage() }));
  if (name === 'app') {
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': 17 }).end('{"received":true}'));
    });
    server.listen(0, '127.0.0.1', () => send({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  } else if (name === 'relay') {
    const [kind, where, prefix] = args as [string, string, string];
    const relay = createRelayServer(kind === 'file' ? { file: where } : { redisUrl: where, redisPrefix: prefix });
    send({ url: (await relay.listen(0, '127.0.0.1')).url });
  } else if (name === 'listener') {
    const [relayUrl, channel, token, forwardTo] = args as [string, string, string, string];
    await connectListener({ relayUrl, channel, token, forwardTo });
    send({ ready: true });
  }
}

function child(name: string, ...args: string[]): Promise<{ child: ChildProcess; first: Message }> {
  const started = fork(fileURLToPath(import.meta.url), ['--role', name, ...args], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    started.once('message', (first: Message) => resolve({ child: started, first }));
    started.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
}

/** CPU microseconds (user + system) of a part so far. */
function cpu(part: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    part.once('message', (message: Message) => resolve(message.cpu!.user + message.cpu!.system));
    part.send('cpu');
  });
}

/** redis-server's CPU microseconds so far, from /proc (Linux); NaN elsewhere. */
async function redisCpu(pid: number): Promise<number> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / 100) * 1e6; // utime + stime, in clock ticks of 10 ms
  } catch {
    return Number.NaN;
  }
}

/** A private redis-server on a free loopback port, persisting as a production relay's Redis would. */
async function startRedis(dir: string): Promise<{ url: string; process: ChildProcess }> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const server = spawnProcess('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  for (let tries = 0; ; tries++) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (error) {
      if (tries > 200) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  client.disconnect();
  return { url, process: server };
}

// ---- load ----------------------------------------------------------------------------------------

let delivery = 0;

/** Events/s for EVENTS POSTs to `url`, each with a delivery id of its own; every one must get the app's 200. */
async function burst(url: string): Promise<number> {
  const { seconds } = await sendAmount(url, CONCURRENCY, EVENTS, [
    {
      method: 'POST',
      body: BODY,
      setupRequest: (request: { headers?: Record<string, string> }) => ({
        ...request,
        headers: { 'content-type': 'application/json', 'x-service-event': 'video.completed', 'x-service-signature': SIGNATURE, 'x-service-delivery': `dlv_${++delivery}` },
      }),
    },
  ]);
  return EVENTS / seconds;
}

// ---- main ----------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-bench-relay-redis-'));
  const parts: ChildProcess[] = [];
  const keep = <T extends { child: ChildProcess }>(part: T) => (parts.push(part.child), part);
  try {
    const redis = await startRedis(dir);
    parts.push(redis.process);
    const app = keep(await child('app'));
    const prefix = 'bench:relay:';
    const [file, a, b] = await Promise.all([child('relay', 'file', join(dir, 'relay.json')), child('relay', 'redis', redis.url, prefix), child('relay', 'redis', redis.url, prefix)]).then((all) => all.map(keep));
    const setups = [
      { name: 'one relay process, data file', relays: [file!], sender: file!.first.url!, listener: file!.first.url! },
      { name: 'one relay process, Redis', relays: [a!], sender: a!.first.url!, listener: a!.first.url! },
      { name: 'two relay processes, Redis: sender to A, listener on B', relays: [a!, b!], sender: a!.first.url!, listener: b!.first.url! },
    ];
    const runs = [];
    for (const setup of setups) {
      const channel = await createChannel(setup.sender);
      keep(await child('listener', setup.listener, channel.channel, channel.token, app.first.url!));
      runs.push({ ...setup, ingress: channel.url, rates: [] as number[], cpu: [] as number[], redis: [] as number[] });
    }
    // Warm-up: JIT, keep-alive sockets, Lua scripts loaded.
    for (const run of runs) await burst(run.ingress);
    for (let round = 0; round < ROUNDS; round++) {
      for (const run of runs) {
        const before = await Promise.all([...run.relays.map((relay) => cpu(relay.child)), redisCpu(redis.process.pid!)]);
        run.rates.push(await burst(run.ingress));
        const after = await Promise.all([...run.relays.map((relay) => cpu(relay.child)), redisCpu(redis.process.pid!)]);
        const relays = run.relays.reduce((sum, _relay, i) => sum + after[i]! - before[i]!, 0);
        run.cpu.push(relays / EVENTS);
        run.redis.push((after.at(-1)! - before.at(-1)!) / EVENTS);
      }
    }
    const [base, , scaled] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]];
    const rows = runs.map((run) => [
      run.name,
      num(median(run.rates)),
      ratio(median(run.rates.map((rate, i) => rate / base.rates[i]!)), 1),
      `${Math.round(median(run.cpu))} µs`,
      run === base ? '–' : `${Math.round(median(run.redis))} µs`,
    ]);
    const lines = [
      `${EVENTS.toLocaleString('en-US')} events per burst, ${CONCURRENCY} in flight, ${ROUNDS} interleaved rounds after a warm-up; medians, and each ratio taken within its round.`,
      '',
      table(['set-up', 'events/s', 'vs data file', 'relay CPU per event (all relay processes)', 'redis-server CPU per event'], rows),
      '',
      `- two processes on Redis carry ${ratio(median(scaled.rates.map((rate, i) => rate / base.rates[i]!)), 1)} the events/s of one process on its data file`,
      '- every process here (relays, listener, app, autocannon, redis-server) shares the same cores, so the CPU columns explain the ratio: scale-out pays off when the relay processes and Redis have machines or cores of their own',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const part of parts) part.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--role');
if (at >= 0) await role(process.argv[at + 1]!, process.argv.slice(at + 2));
else await main();
