// Issue 30 item 1: one Redis inbox shared by two receiver processes: each event is handled by one of
// them, once; a process killed holding claims loses them when the lease ends, and the other runs them.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, expect, it } from 'vitest';
import { createReceiver, createTestWebhook, MemoryDeliveryStore, type InboxStats } from '../../src/index.js';
import { RedisInboxBackend } from '../../src/receiver/inbox/redis-backend.js';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const child = fileURLToPath(new URL('./inbox-redis.child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
let prefixes = 0;

interface Child {
  proc: ChildProcessWithoutNullStreams;
  url: string;
  /** `[event id, attempt, source]` per handler run. */
  handled: Array<[number, number, string]>;
  /** Resolves once the child's inbox has nothing in flight, with every "handled" line it printed before read. */
  idle(): Promise<void>;
}

async function start(prefix: string, mode: 'run' | 'hang'): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, redis!.url, prefix, mode], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
  cleanups.push(async () => void proc.kill('SIGKILL'));
  const handled: Child['handled'] = [];
  const idles: Array<() => void> = [];
  let output = '';
  const port = await new Promise<string>((resolve, reject) => {
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (output + chunk).split('\n');
      output = lines.pop()!;
      for (const line of lines) {
        const [word, id, attempt, source] = line.split(' ');
        if (word === 'listening') resolve(id!);
        if (word === 'handled') handled.push([Number(id), Number(attempt), source!]);
        if (word === 'idle') idles.shift()?.();
      }
    });
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => process.stderr.write(chunk));
    proc.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
  const idle = () =>
    new Promise<void>((resolve) => {
      idles.push(resolve);
      proc.stdin.write('idle\n');
    });
  return { proc, url: `http://127.0.0.1:${port}/webhooks`, handled, idle };
}

/** The records per state of the inbox under `prefix`, read from Redis as the children left them. */
async function statsOf(prefix: string): Promise<InboxStats> {
  const backend = new RedisInboxBackend({ redis: redis!.url, prefix: `${prefix}i:`, keepDone: 1000, keepDoneMs: 86_400_000 });
  try {
    return await backend.stats();
  } finally {
    await backend.close();
  }
}

const post = async (url: string, hook: { headers: Record<string, string>; body: string }) => (await fetch(url, { method: 'POST', headers: hook.headers, body: hook.body })).status;

it.skipIf(!redis)('two processes on one Redis inbox: 40 events, each handled by exactly one of them', async () => {
  const prefix = `two${++prefixes}:`;
  const [a, b] = await Promise.all([start(prefix, 'run'), start(prefix, 'run')]);
  const hooks = Array.from({ length: 40 }, () => createTestWebhook('video.completed', { secret: 'whsec_redis_inbox' }));
  // Every event is sent to both processes at once: one takes it, the other answers a duplicate or in progress.
  const statuses = await Promise.all(hooks.flatMap((hook) => [post(a!.url, hook), post(b!.url, hook)]));
  expect(statuses.filter((s) => s === 202)).toHaveLength(40);
  // Every event done in Redis: none can be claimed again. Then each child's idle answer comes after every
  // "handled" line it printed, so a second run would be in `handled` by now.
  await expect.poll(() => statsOf(prefix), { timeout: 15_000, interval: 50 }).toEqual({ pending: 0, running: 0, dead: 0, done: 40 });
  await Promise.all([a!.idle(), b!.idle()]);
  const all = [...a!.handled, ...b!.handled].map(([id]) => id);
  expect(all.sort()).toEqual(hooks.map((hook) => hook.event.id).sort());
}, 60_000);

it.skipIf(!redis)('a process killed holding claims loses them when the lease ends, and the other runs them (stalled)', async () => {
  const prefix = `stall${++prefixes}:`;
  const hanging = await start(prefix, 'hang');
  const hooks = Array.from({ length: 5 }, () => createTestWebhook('video.completed', { secret: 'whsec_redis_inbox' }));
  for (const hook of hooks) expect(await post(hanging.url, hook)).toBe(202);
  hanging.proc.kill('SIGKILL');
  await new Promise((resolve) => hanging.proc.once('exit', resolve));
  const other = await start(prefix, 'run');
  await expect.poll(() => other.handled.length, { timeout: 15_000, interval: 50 }).toBe(5);
  expect(other.handled.map(([id]) => id).sort()).toEqual(hooks.map((hook) => hook.event.id).sort());
  // The two the killed process was running count that run; the three waiting behind them do not.
  expect(other.handled.map(([, attempt]) => attempt).sort()).toEqual([1, 1, 1, 2, 2]);
}, 60_000);

it.skipIf(!redis)('a Redis away at start answers 503 store_unavailable and loses nothing; once it is back, events are taken and run', async () => {
  const own = await startRedis();
  cleanups.push(() => own.stop());
  await own.kill();
  const receiver = createReceiver({ secret: 'whsec_redis_inbox', store: new MemoryDeliveryStore(), inbox: { redis: own.url, pollMs: 50 } });
  receiver.onError(() => undefined);
  const handled: number[] = [];
  receiver.onAny((event) => void handled.push(event.id));
  cleanups.push(() => receiver.close().catch(() => undefined));
  const hook = createTestWebhook('video.completed', { secret: 'whsec_redis_inbox' });
  const send = async () => (await receiver.receive(Buffer.from(hook.body), hook.headers)).status;
  expect(await send()).toBe(503);
  await own.start();
  // The claim was released: the sender's retry is a first delivery, not a duplicate.
  await expect.poll(send, { timeout: 10_000, interval: 100 }).toBe(202);
  await expect.poll(() => handled, { timeout: 10_000, interval: 50 }).toEqual([hook.event.id]);
}, 30_000);

it.skipIf(!redis)('a handler slower than the lease keeps its claim while it runs: another process never starts it too', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const now = () => clock.now();
  const prefix = `slow${++prefixes}:`;
  const runs: string[] = [];
  const make = (name: string) => {
    const receiver = createReceiver({ secret: 'whsec_redis_inbox', clock: now, store: new MemoryDeliveryStore({ clock: now }), leaseMs: 1_000, inbox: { redis: redis!.url, prefix, pollMs: 200, timers: clock } });
    receiver.onAny(async () => {
      runs.push(name);
      await new Promise<void>((resolve) => clock.setTimeout(resolve, 5_000)); // five leases long
    });
    cleanups.push(() => receiver.close());
    return receiver;
  };
  const a = make('a');
  const b = make('b');
  // After each timer it fires, the clock waits for both inboxes' Redis round trips (renewals, looks for
  // work, outcomes), so a renewal reaches Redis before time passes the lease, whatever the machine's speed.
  const quiet = () => Promise.all([a.inbox!.idle({ handlers: false }), b.inbox!.idle({ handlers: false })]).then(() => undefined);
  clock.settleWith(quiet);
  const hook = createTestWebhook('video.completed', { secret: 'whsec_redis_inbox', now: clock.now() });
  expect((await a.receive(Buffer.from(hook.body), hook.headers)).status).toBe(202);
  await quiet();
  expect(runs).toHaveLength(1);
  await clock.advance(6_000); // the handler's five seconds: ten renewals, thirty looks for work by each
  // Either process may have taken it (both look for work); what matters is that no other started it too.
  expect(runs).toHaveLength(1);
  await Promise.all([a.inbox!.idle(), b.inbox!.idle()]);
  expect(await b.inbox!.stats()).toMatchObject({ pending: 0, running: 0, done: 1 });
}, 30_000);
