// RedisDeliveryStore from two processes: claims/s (one script over a delivery's key, as the receiver
// claims since issue 30: `e:<event>:<clip id>` alone) against a bare `SET key 1 NX PX` loop from the same two processes on the same private
// Redis, and deliveries/s (claim + complete, the receiver's two round trips); with each, the µs Redis spent
// executing commands per operation (INFO commandstats, reset before each round). Each process keeps
// `--concurrency` operations in flight on one connection; modes alternate over `--rounds`.
//   node --import tsx bench/redis-store.ts [--ops 40000] [--concurrency 64] [--rounds 3]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis.js';
import { intOption, median, num, ratio, table, target } from './lib.js';
import { code } from './parts/code.js';

// The package as users run it: built first (bench/parts/code.ts).
const { RedisDeliveryStore } = await code<typeof import('../src/receiver/redis-delivery-store.js')>('receiver/redis-delivery-store.js');

const OPS = intOption('ops', 'BENCH_OPS', 40_000);
const CONCURRENCY = intOption('concurrency', 'BENCH_CONCURRENCY', 64);
const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 3);
const LEASE_MS = 60_000;
const TARGET = 20_000;
const TARGET_RATIO = 0.8;

type Mode = 'set' | 'claim' | 'deliver';

/** One process of a round: waits for "go" on stdin, runs OPS operations, prints its elapsed ms. */
async function child(mode: Mode, url: string, tag: string): Promise<void> {
  const redis = new Redis(url);
  const store = new RedisDeliveryStore({ redis, prefix: `bench:${tag}:` });
  // One warm-up call per mode, so the script is cached by Redis and the connection is up before "go".
  await redis.set(`bench:${tag}:warm`, '1', 'PX', LEASE_MS, 'NX');
  await store.claim([`warm-${tag}`], LEASE_MS, 'warm');
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < OPS) {
        const n = next++;
        const id = `${tag}-${n.toString(36)}-4f1c-9a2e`;
        if (mode === 'set') {
          if ((await redis.set(`bench:${tag}:d:${id}`, '1', 'PX', LEASE_MS, 'NX')) !== 'OK') throw new Error('a fresh key was taken');
          continue;
        }
        const keys = [`e:video.completed:${tag}:${n}`];
        if ((await store.claim(keys, LEASE_MS, id)) !== 'claimed') throw new Error('a fresh delivery was not claimed');
        if (mode === 'deliver') await store.complete(keys);
      }
    }),
  );
  process.stdout.write(`${performance.now() - start}\n`);
  await store.close();
  redis.disconnect();
}

/** Two processes at once, released together; ops/s over the slower one's time, and Redis µs per operation. */
async function round(mode: Mode, url: string, r: number): Promise<{ ops: number; redisUs: number }> {
  const script = fileURLToPath(import.meta.url);
  const children = [0, 1].map((i) =>
    spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, BENCH_CHILD: `${mode}:${url}:r${r}p${i}${mode}` }, stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const exited = children.map((c) => new Promise((resolve) => c.once('exit', resolve)));
  const lines = children.map((c) => {
    const queue: string[] = [];
    const waiting: Array<(line: string) => void> = [];
    let buffered = '';
    c.stdout.setEncoding('utf8');
    c.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) (waiting.shift() ?? ((l: string) => queue.push(l)))(line);
    });
    return () => new Promise<string>((resolve) => (queue.length > 0 ? resolve(queue.shift()!) : waiting.push(resolve)));
  });
  await Promise.all(lines.map((next) => next()));
  const stats = new Redis(url);
  await stats.config('RESETSTAT');
  for (const c of children) c.stdin.end('go\n');
  const times = (await Promise.all(lines.map((next) => next()))).map(Number);
  const info = await stats.info('commandstats');
  stats.disconnect();
  await Promise.all(exited);
  // A script's usec includes the commands it calls, which Redis also counts under their own names: with
  // scripts, only EVAL/EVALSHA; without, every command but CONFIG and INFO.
  const stat = [...info.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)].map(([, name, us]) => ({ name: name!, us: Number(us) }));
  const scripts = stat.filter(({ name }) => name === 'eval' || name === 'evalsha');
  const usec = (scripts.length > 0 ? scripts : stat.filter(({ name }) => !name.startsWith('config') && name !== 'info')).reduce((sum, { us }) => sum + us, 0);
  return { ops: (2 * OPS) / (Math.max(...times) / 1000), redisUs: usec / (2 * OPS) };
}

if (process.env.BENCH_CHILD) {
  const [mode, ...rest] = process.env.BENCH_CHILD.split(':');
  const tag = rest.pop()!;
  await child(mode as Mode, rest.join(':'), tag);
} else {
  const redis = await startRedis();
  try {
    const results: Record<Mode, number[]> = { set: [], claim: [], deliver: [] };
    const redisUs: Record<Mode, number[]> = { set: [], claim: [], deliver: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of ['set', 'claim', 'deliver'] as const) {
        const { ops, redisUs: us } = await round(mode, redis.url, r);
        results[mode].push(ops);
        redisUs[mode].push(us);
      }
    }
    const set = median(results.set);
    const claim = median(results.claim);
    const deliver = median(results.deliver);
    const us = (mode: Mode) => median(redisUs[mode]).toFixed(1);
    console.log(`Median of ${ROUNDS} rounds; two processes, ${num(OPS)} operations each, ${CONCURRENCY} in flight per process, one private redis-server.\n`);
    console.log(
      table(
        ['operation (two processes)', 'ops/s', 'vs bare SET NX PX', 'Redis µs per op (commandstats)'],
        [
          ['bare `SET key 1 NX PX` (baseline)', num(set), '1.00×', us('set')],
          ['`RedisDeliveryStore.claim` (one `SET NX PX GET` on the delivery key, no script)', num(claim), ratio(claim, set), us('claim')],
          ['deliveries: claim + complete (2 round trips)', num(deliver), ratio(deliver, set), us('deliver')],
        ],
      ),
    );
    console.log('');
    console.log(target(`≥ ${num(TARGET)} claims/s from two processes (${num(claim)}/s)`, claim >= TARGET));
    console.log(target(`claims ≥ ${TARGET_RATIO}× bare SET NX PX (${ratio(claim, set)})`, claim >= TARGET_RATIO * set));
  } finally {
    await redis.stop();
  }
}
