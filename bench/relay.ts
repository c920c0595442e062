/**
 * Relay benchmarks (issues 4 and 23). Run: `node --import tsx bench/relay.ts [--quick]`; prints markdown.
 *
 * The relay and `listen` are the built package (dist/, built first: bench/parts/code.ts), as users run them.
 * Each part runs in its own process, as it would in use (relay on a server; `listen` and the app on a
 * laptop), all on 127.0.0.1. `listen` is the CLI command as users run it: with its defaults (the inspector
 * on, its log beside the state file, a line per event and reply on stdout, piped and drained here), and
 * with `--no-inspect`. The baseline is a bare node:http app answering 200, which the relayed events reach too.
 *   1. added latency: sender -> relay -> listen (defaults) -> app against sender -> app, sequential, interleaved;
 *   2. events/s and CPU µs per event: direct, through listen with its defaults, through listen --no-inspect,
 *      in interleaved rounds (the order turns each round), each ratio taken within its round;
 *   3. listen's memory with and without the inspector once more events went through it than it keeps;
 *   4. the inspector's cost paired: a listen with its defaults and a listen --no-inspect on one channel, so the
 *      relay sends each of them every event at the same moment, and their CPU per event is read over the same
 *      window (part 2 takes the two from bursts a minute apart, which the host's load moves by tens of percent);
 *   5. relay memory for 10,000 idle connected listeners, one channel each.
 * BENCH_PROFILE=<dir> writes a CPU profile of each process over part 2 (bench/top-frames.ts reads it).
 * Figures from one run on a shared 2-core machine are noisy: read the ratios, not the last digit.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { intOption, median, num, table, target } from './lib.js';
import { sendAmount } from './parts/amount.js';
import { code } from './parts/code.js';
import { all, answerParent, cpuPerEvent, forkRole, type Child } from './parts/children.js';

const { createChannel, createRelayServer, sign } = await code<typeof import('../src/index.js')>('index.js');
const QUICK = process.argv.includes('--quick');
const SCRIPT = fileURLToPath(import.meta.url);
const LATENCY_SAMPLES = QUICK ? 500 : 3_000;
const EVENTS = intOption('events', 'BENCH_EVENTS', QUICK ? 3_000 : 10_000);
const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', QUICK ? 2 : 3);
// BENCH_PARTS=throughput (or latency, memory, comma-separated) runs only those parts, for quick A/B runs.
const PARTS = new Set((process.env.BENCH_PARTS ?? 'latency,throughput,paired,memory').split(','));
const CONCURRENCY = intOption('concurrency', 'BENCH_CONCURRENCY', 64);
const IDLE_LISTENERS = QUICK ? 1_000 : 10_000;
/** The inspector's documented bounds (docs/inspector.md): 10,000 exchanges, 64 MiB in memory. */
const INSPECTOR_EVENTS = 10_000;
const INSPECTOR_BYTES = 64 * 1024 * 1024;
const BODY = JSON.stringify({ event: 'video.completed', id: 48213, status: 'done', prompt: 'A red fox trotting through fresh snow'.repeat(12) });
const HEADERS = {
  'content-type': 'application/json',
  'x-service-event': 'video.completed',
  'x-service-delivery': 'dlv_bench',
  'x-service-signature': sign(BODY, 'whsec_bench'),
};

// ---- child roles ---------------------------------------------------------------------------------

async function role(name: string, args: string[]): Promise<void> {
  answerParent(name);
  if (name === 'app') {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': 17 }).end('{"received":true}'));
    });
    server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  } else if (name === 'relay') {
    // 10,000 idle listeners each need a channel: above the default cap of 1,000 (issue 10).
    const relay = createRelayServer({ file: args[0] === 'memory' ? false : args[0]!, maxChannels: 20_000 });
    const { url } = await relay.listen(0, '127.0.0.1');
    process.send!({ url });
  } else if (name === 'listen' || name === 'listen-no-inspect') {
    // The CLI itself, as `cliphook listen` runs it; the parent waits for its "Ready!" line.
    const [relayUrl, channel, token, forwardTo, state] = args as [string, string, string, string, string];
    const { main: cli } = await code<typeof import('../src/cli/main.js')>('cli/main.js');
    const flags = ['--relay', relayUrl, '--forward-to', forwardTo, '--channel', channel, '--token', token, '--state', state];
    process.exitCode = await cli(['node', 'cliphook', 'listen', ...flags, ...(name === 'listen' ? [] : ['--no-inspect'])]);
  }
}

// ---- load ----------------------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

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

/**
 * Events/s for `total` POSTs, CONCURRENCY at a time, sent by autocannon (as in bench/middleware.ts): it
 * spends about a third of node:http's client CPU per request, and on two cores every microsecond the load
 * generator uses is taken from the processes being measured.
 */
let sequence = 0;

async function throughput(url: string, total: number): Promise<number> {
  // Each event its own delivery id, as a sender's are (the relay keeps one buffered copy per delivery id).
  const setupRequest = (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...HEADERS, 'x-service-delivery': `dlv_bench_${++sequence}` } });
  const { seconds } = await sendAmount(url, CONCURRENCY, total, [{ method: 'POST', body: BODY, setupRequest }]);
  return total / seconds;
}

/** One burst of `EVENTS` to `url`: events/s and the CPU µs per event of each of `measured`. */
async function burst(url: string, measured: readonly Child[]): Promise<{ rate: number; cpu: Map<string, number>; gc: Map<string, number>; sender: number }> {
  const before = await Promise.all(measured.map((child) => child.stats()));
  const own = process.cpuUsage();
  const rate = await throughput(url, EVENTS);
  const used = process.cpuUsage(own);
  const after = await Promise.all(measured.map((child) => child.stats()));
  return {
    rate,
    // The load generator (autocannon, in this process) per event: the share of the two cores the measured
    // processes do not get, and the part of the direct path's cost that relaying does not add to.
    sender: (used.user + used.system) / EVENTS,
    cpu: new Map(measured.map((child, i) => [child.name, cpuPerEvent(before[i]!, after[i]!, EVENTS)])),
    // µs of collector pauses per event: what a process's heap costs it, apart from its own work.
    gc: new Map(measured.map((child, i) => [child.name, ((after[i]!.gcMs - before[i]!.gcMs) * 1000) / EVENTS])),
  };
}

/**
 * Part 4: `EVENTS` events to one channel with two listeners on it, each of which gets every event (the
 * first reply answers the sender). The slower one may still be working through what the relay sent it when
 * the burst ends, so each is read once it has gone quiet.
 */
async function pairedBurst(url: string, pair: readonly [Child, Child]): Promise<[number, number]> {
  const before = await Promise.all(pair.map((child) => child.stats()));
  await throughput(url, EVENTS);
  const after = await Promise.all(pair.map((child) => quiet(child)));
  return [cpuPerEvent(before[0]!, after[0]!, EVENTS), cpuPerEvent(before[1]!, after[1]!, EVENTS)];
}

/** The child's stats once it used under 2 ms of CPU in 200 ms (polled without `stats`' collection). */
async function quiet(child: Child) {
  let last = await child.cpu();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = await child.cpu();
    if (now - last < 2_000) return child.stats();
    last = now;
  }
}

async function idleListeners(file: string) {
  const { child, first } = await forkRole(SCRIPT, 'relay', [file]);
  const relayUrl = first.url as string;
  const channels = [];
  for (let i = 0; i < IDLE_LISTENERS; i += 50) {
    channels.push(...(await Promise.all(Array.from({ length: Math.min(50, IDLE_LISTENERS - i) }, () => createChannel(relayUrl)))));
  }
  const before = (await child.stats()).memory;
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
  const after = (await child.stats()).memory;
  for (const socket of sockets) socket.terminate();
  child.process.kill();
  return { before, after };
}

// ---- main ----------------------------------------------------------------------------------------

const PATHS = ['direct', 'listen', 'listen-no-inspect'] as const;
type Path = (typeof PATHS)[number];

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-bench-relay-'));
  const children: Child[] = [];
  const load = loadavg()[0]!;
  try {
    const app = await forkRole(SCRIPT, 'app', []);
    // BENCH_RELAY_FILE=memory runs the relay without its data file, to see what persistence costs.
    const relay = await forkRole(SCRIPT, 'relay', [process.env.BENCH_RELAY_FILE === 'memory' ? 'memory' : join(dir, 'relay.json')]);
    children.push(app.child, relay.child);
    const appUrl = app.first.url as string;
    const relayUrl = relay.first.url as string;
    const urls: Record<Path, string> = { direct: appUrl, listen: '', 'listen-no-inspect': '' };
    const listeners = new Map<Path, Child>();
    for (const name of ['listen', 'listen-no-inspect'] as const) {
      const channel = await createChannel(relayUrl);
      const { child } = await forkRole(SCRIPT, name, [relayUrl, channel.channel, channel.token, appUrl, join(dir, `${name}.json`)], { readyLine: /Ready!/ });
      children.push(child);
      listeners.set(name, child);
      urls[name] = channel.url;
    }

    const lat = PARTS.has('latency') ? await latency(appUrl, urls.listen) : null;
    const rates: Record<Path, number[]> = { direct: [], listen: [], 'listen-no-inspect': [] };
    const ratios = { relay: [] as number[], listen: [] as number[], plain: [] as number[], inspector: [] as number[], rate: [] as number[], ratePlain: [] as number[] };
    const cpu = { app: [] as number[], relay: [] as number[], listen: [] as number[], plain: [] as number[] };
    const gc = { app: [] as number[], relay: [] as number[], listen: [] as number[], plain: [] as number[] };
    const sender = { direct: [] as number[], relayed: [] as number[] };
    /** Cores kept busy per path (events/s × the CPU per event of every process on it, the sender's too). */
    const busy = { direct: [] as number[], listen: [] as number[], plain: [] as number[] };
    /** The relayed rate's ceiling were the relay and listen each as cheap as the bare app (see below). */
    const ceiling: number[] = [];
    if (PARTS.has('throughput')) {
      // Warm-up: JIT, keep-alive sockets, the inspector's first log writes.
      for (const path of PATHS) await throughput(urls[path], Math.min(EVENTS, 3_000));
      await all(children, 'profile-start');
      for (let round = 0; round < ROUNDS; round++) {
        const got = new Map<Path, Awaited<ReturnType<typeof burst>>>();
        for (let k = 0; k < PATHS.length; k++) {
          const path = PATHS[(k + round) % PATHS.length]!;
          got.set(path, await burst(urls[path], path === 'direct' ? [app.child] : [relay.child, listeners.get(path)!, app.child]));
        }
        const appCpu = got.get('direct')!.cpu.get('app')!;
        const withInspector = got.get('listen')!;
        const plain = got.get('listen-no-inspect')!;
        for (const path of PATHS) rates[path].push(got.get(path)!.rate);
        cpu.app.push(appCpu);
        cpu.relay.push(withInspector.cpu.get('relay')!, plain.cpu.get('relay')!);
        cpu.listen.push(withInspector.cpu.get('listen')!);
        cpu.plain.push(plain.cpu.get('listen-no-inspect')!);
        gc.app.push(got.get('direct')!.gc.get('app')!);
        gc.relay.push(withInspector.gc.get('relay')!, plain.gc.get('relay')!);
        gc.listen.push(withInspector.gc.get('listen')!);
        gc.plain.push(plain.gc.get('listen-no-inspect')!);
        ratios.relay.push(withInspector.cpu.get('relay')! / appCpu, plain.cpu.get('relay')! / appCpu);
        ratios.listen.push(withInspector.cpu.get('listen')! / appCpu);
        ratios.plain.push(plain.cpu.get('listen-no-inspect')! / appCpu);
        ratios.inspector.push(withInspector.cpu.get('listen')! / plain.cpu.get('listen-no-inspect')! - 1);
        ratios.rate.push(withInspector.rate / got.get('direct')!.rate);
        ratios.ratePlain.push(plain.rate / got.get('direct')!.rate);
        const direct = got.get('direct')!;
        sender.direct.push(direct.sender);
        sender.relayed.push(withInspector.sender, plain.sender);
        busy.direct.push((direct.rate * (appCpu + direct.sender)) / 1e6);
        busy.listen.push((withInspector.rate * (withInspector.cpu.get('app')! + withInspector.sender + withInspector.cpu.get('relay')! + withInspector.cpu.get('listen')!)) / 1e6);
        busy.plain.push((plain.rate * (plain.cpu.get('app')! + plain.sender + plain.cpu.get('relay')! + plain.cpu.get('listen-no-inspect')!)) / 1e6);
        // With the cores equally busy on both paths, rates go inversely as the CPU per event summed over the
        // processes: relayed ÷ direct = (app + sender) ÷ (app + sender + relay + listen). A relay and a listen
        // each costing one bare app's request (less than each does: the relay serves that same request and
        // more; listen makes it, as a client) bound the ratio from above.
        ceiling.push((appCpu + direct.sender) / (3 * appCpu + direct.sender));
      }
      await all(children, 'profile-stop');
    }
    const [inspected, bare] = await Promise.all([listeners.get('listen')!.stats(), listeners.get('listen-no-inspect')!.stats()]);
    // Part 4: the same two commands on one channel, fresh (their inspector's book fills as part 2's did).
    const paired = { with: [] as number[], without: [] as number[], adds: [] as number[] };
    if (PARTS.has('paired')) {
      const channel = await createChannel(relayUrl);
      const pair: Child[] = [];
      for (const name of ['listen', 'listen-no-inspect'] as const) {
        const { child } = await forkRole(SCRIPT, name, [relayUrl, channel.channel, channel.token, appUrl, join(dir, `paired-${name}.json`)], { readyLine: /Ready!/, name: `paired ${name}` });
        children.push(child);
        pair.push(child);
      }
      await throughput(channel.url, Math.min(EVENTS, 3_000)); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        const [withInspector, without] = await pairedBurst(channel.url, [pair[0]!, pair[1]!]);
        paired.with.push(withInspector);
        paired.without.push(without);
        paired.adds.push(withInspector / without - 1);
      }
    }
    for (const child of children.splice(0)) child.process.kill();
    const memory = PARTS.has('memory') ? await idleListeners(join(dir, 'idle.json')) : null;

    const ms = (value: number) => `${value.toFixed(2)} ms`;
    const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
    const x = (values: number[]) => `${median(values).toFixed(2)}×`;
    const us = (values: number[]) => `${num(median(values))} µs`;
    const out: string[] = [];
    out.push(`node ${process.version}; ${num(EVENTS)} events per burst, ${CONCURRENCY} in flight (autocannon), ${ROUNDS} interleaved rounds of direct / listen / listen --no-inspect; relay buffer ${process.env.BENCH_RELAY_FILE === 'memory' ? 'in memory' : 'persisted to its data file'}; load average ${load.toFixed(1)} at the start. Medians; each ratio is the median of ratios taken within a round.\n`);
    if (lat) {
      out.push(table(['latency, one at a time (3,000 each way)', 'direct to the app', 'relay + listen (defaults)', 'added', 'target'], [
        ['p50', ms(lat.direct.p50), ms(lat.relay.p50), `+${ms(lat.relay.p50 - lat.direct.p50)}`, '+≤ 1 ms'],
        ['p99', ms(lat.direct.p99), ms(lat.relay.p99), `+${ms(lat.relay.p99 - lat.direct.p99)}`, '+≤ 3 ms'],
      ]));
      out.push('');
    }
    if (PARTS.has('throughput')) {
      out.push(table(['path', 'events/s', 'vs direct', 'CPU µs per event', 'vs the bare app\'s CPU per request'], [
        ['direct to the app (bare node:http)', num(median(rates.direct)), '1.00×', `app ${us(cpu.app)}`, '1.00×'],
        ['relay + listen with its defaults (inspector on)', num(median(rates.listen)), x(ratios.rate), `relay ${us(cpu.relay)}; listen ${us(cpu.listen)}`, `relay ${x(ratios.relay)}; listen ${x(ratios.listen)}`],
        ['relay + listen --no-inspect', num(median(rates['listen-no-inspect'])), x(ratios.ratePlain), `listen ${us(cpu.plain)}`, `listen ${x(ratios.plain)}`],
      ]));
      out.push('');
      out.push(
        `The load generator (autocannon, in the bench process) used ${us(sender.direct)} of CPU per event direct and ${us(sender.relayed)} relayed. ` +
          `Cores kept busy by all the processes on each path: direct ${median(busy.direct).toFixed(2)}, relay + listen ${median(busy.listen).toFixed(2)}, with --no-inspect ${median(busy.plain).toFixed(2)} (of 2). ` +
          `With the cores as busy either way, relayed ÷ direct = (app + sender) ÷ (app + sender + relay + listen): were the relay and listen each to cost no more than one bare app's request, the ratio would be ${x(ceiling)}; at the 2× targets for both, ${x(sender.direct.map((g, i) => (cpu.app[i]! + g) / (5 * cpu.app[i]! + g)))}.`,
      );
      out.push('');
      out.push(`Garbage collection pauses per event (perf_hooks): the app ${us(gc.app)}, the relay ${us(gc.relay)}, listen ${us(gc.listen)} with its inspector and ${us(gc.plain)} without.`);
      out.push('');
      const inspectorBytes = inspected.memory.heapUsed - bare.memory.heapUsed;
      out.push(table(['listen, after every burst', 'heap used (after GC)', 'peak RSS'], [
        ['with its defaults (inspector on)', mib(inspected.memory.heapUsed), mib(inspected.maxRss)],
        ['--no-inspect', mib(bare.memory.heapUsed), mib(bare.maxRss)],
      ]));
      out.push('');
      const sent = (lat ? 300 + LATENCY_SAMPLES : 0) + Math.min(EVENTS, 3_000) + ROUNDS * EVENTS;
      out.push(`The inspector held the last ${num(Math.min(sent, INSPECTOR_EVENTS))} of the ${num(sent)} events sent through it: ${mib(inspectorBytes)} more heap than without it, against its documented bound of ${num(INSPECTOR_EVENTS)} exchanges and ${mib(INSPECTOR_BYTES)}.\n`);
      out.push(target(`relay CPU per event ≤ 2× the bare app's per request (${x(ratios.relay)})`, median(ratios.relay) <= 2));
      out.push(target(`listen (defaults) CPU per event ≤ 2× the bare app's (${x(ratios.listen)})`, median(ratios.listen) <= 2));
      out.push(target(`listen --no-inspect CPU per event ≤ 2× the bare app's (${x(ratios.plain)})`, median(ratios.plain) <= 2));
      out.push(target(`the inspector adds ≤ 25 % to listen's CPU per event (${(median(ratios.inspector) * 100).toFixed(0)} %)`, median(ratios.inspector) <= 0.25));
      out.push(target(`the inspector's memory within its bound (+${mib(inspectorBytes)} heap ≤ ${mib(INSPECTOR_BYTES)})`, inspectorBytes <= INSPECTOR_BYTES));
      out.push(target(`one relay + one listen (defaults) ≥ 0.45× the direct rate (${x(ratios.rate)})`, median(ratios.rate) >= 0.45));
    }
    if (paired.adds.length) {
      out.push('');
      out.push(
        `Paired (part 4: both on one channel, each given every event at the same moment, ${ROUNDS} bursts of ${num(EVENTS)}): listen with its defaults ${us(paired.with)} of CPU per event, ` +
          `--no-inspect ${us(paired.without)}; the inspector adds ${paired.adds.map((value) => `${(value * 100).toFixed(0)} %`).join(', ')} (median ${(median(paired.adds) * 100).toFixed(0)} %).\n`,
      );
      out.push(target(`paired: the inspector adds ≤ 25 % to listen's CPU per event (${(median(paired.adds) * 100).toFixed(0)} %)`, median(paired.adds) <= 0.25));
    }
    if (lat) out.push(target(`added p99 ≤ 3 ms (+${ms(lat.relay.p99 - lat.direct.p99)})`, lat.relay.p99 - lat.direct.p99 <= 3));
    if (memory) {
      const rssDelta = memory.after.rss - memory.before.rss;
      const heapDelta = memory.after.heapUsed - memory.before.heapUsed;
      out.push('');
      out.push(`Relay memory with ${IDLE_LISTENERS.toLocaleString('en')} idle listeners: ${mib(memory.after.rss)} RSS, +${mib(rssDelta)} RSS and +${mib(heapDelta)} heap over the same relay with the channels and no listeners (${(rssDelta / IDLE_LISTENERS / 1024).toFixed(1)} KiB each; target ≤ 1 GB).`);
    }
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const child of children) child.process.kill();
    agent.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--role');
if (at >= 0) await role(process.argv[at + 1]!, process.argv.slice(at + 2));
else await main();
