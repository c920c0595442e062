// Issue 30 item 1: the file, memory and Redis inbox back ends pass one contract.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { InboxError } from '../../../src/index.js';
import { FileInboxBackend } from '../../../src/receiver/inbox/file-backend.js';
import { MemoryInboxBackend, MemoryInboxState } from '../../../src/receiver/inbox/memory-backend.js';
import { newRecord, type InboxBackend, type InboxRecord } from '../../../src/receiver/inbox/record.js';
import { RedisInboxBackend } from '../../../src/receiver/inbox/redis-backend.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';
import { tempDir } from '../../helpers/webhooks.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
let prefixes = 0;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const T0 = 1_700_000_000_000;
let now = T0;
const clock = () => now;

interface Made {
  backend: InboxBackend;
  /** A second back end on the same inbox, as the next start (file) or another process (Redis) sees it. */
  reopen: () => Promise<InboxBackend>;
}

interface Keep {
  keepDone?: number;
  keepDoneMs?: number;
  maxAttempts?: number;
  keepDead?: number;
  keepDeadMs?: number;
  onDropped?: (record: InboxRecord) => void;
}

const factories: Record<string, (keep?: Keep) => Promise<Made>> = {
  file: async ({ keepDone = 100, keepDoneMs = 60_000, maxAttempts = 6, ...dead }: Keep = {}) => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    const open = async () => {
      const backend = new FileInboxBackend({ file, keepDone, keepDoneMs, maxAttempts, clock, ...dead });
      await backend.open();
      return backend;
    };
    let current = await open();
    cleanups.push(() => current.close());
    return {
      backend: current,
      reopen: async () => {
        await current.close();
        current = await open();
        return current;
      },
    };
  },
  // The next start in the same process: a receiver made again on the same MemoryDeliveryStore.
  memory: async ({ keepDone = 100, keepDoneMs = 60_000, maxAttempts = 6, ...dead }: Keep = {}) => {
    const state = new MemoryInboxState();
    const open = async () => {
      const backend = new MemoryInboxBackend({ state, keepDone, keepDoneMs, maxAttempts, clock, ...dead });
      await backend.open();
      return backend;
    };
    let current = await open();
    cleanups.push(() => current.close());
    return {
      backend: current,
      reopen: async () => {
        await current.close();
        current = await open();
        return current;
      },
    };
  },
  ...(redis
    ? {
        redis: async ({ keepDone = 100, keepDoneMs = 60_000, maxAttempts = 6, ...dead }: Keep = {}) => {
          const prefix = `inbox${++prefixes}:`;
          const open = async () => {
            const backend = new RedisInboxBackend({ redis: redis.url, prefix, keepDone, keepDoneMs, maxAttempts, ...dead });
            await backend.open();
            cleanups.push(() => backend.close());
            return backend;
          };
          return { backend: await open(), reopen: open };
        },
      }
    : {}),
};

const record = (id: string, at = now) => newRecord(id, 'video.completed', `{"id":"${id}"}`, [`d:${id}`, `e:${id}`], 'webhook', at);

describe.each(Object.entries(factories))('InboxBackend contract: %s', (name, make) => {
  it('adds once, refuses past maxPending, and claims due records in order with attempts counted', async () => {
    now = T0;
    const { backend } = await make();
    expect(await backend.add(record('a'), 2)).toBe('added');
    expect(await backend.add(record('a'), 2)).toBe('exists');
    now += 1;
    expect(await backend.add(record('b'), 2)).toBe('added');
    expect(await backend.add(record('c'), 2)).toBe('full');
    const claimed = await backend.claim(now, now + 1000, 'w1', 10);
    expect(claimed.map((r) => [r.id, r.state, r.attempts])).toEqual([['a', 'running', 1], ['b', 'running', 1]]);
    expect(await backend.claim(now, now + 1000, 'w2', 10)).toEqual([]);
    expect(await backend.stats()).toEqual({ pending: 0, running: 2, dead: 0, done: 0 });
    // Still full while they run: maxPending counts pending and running.
    expect(await backend.add(record('c'), 2)).toBe('full');
  });

  it('refuses past maxPendingBytes of pending and running bodies; a dead or done one frees its bytes, a replay takes them again', async () => {
    // Issue 30 follow-up item 1: each body here is 10 bytes ('{"id":"a"}').
    now = T0;
    const { backend, reopen } = await make();
    expect(await backend.add(record('a'), 100, 20)).toBe('added');
    expect(await backend.add(record('b'), 100, 20)).toBe('added');
    expect(await backend.add(record('c'), 100, 20)).toBe('full');
    const [a, b] = await backend.claim(now, now + 1000, 'w', 10);
    expect(await backend.add(record('c'), 100, 20)).toBe('full'); // running bodies still count
    await backend.settle({ ...a!, state: 'pending', nextAttemptAt: now + 5, lastError: 'x' }, 'w', now);
    expect(await backend.add(record('c'), 100, 20)).toBe('full'); // and so do those waiting for a retry
    await backend.settle({ ...b!, state: 'dead', finishedAt: now, lastError: 'x' }, 'w', now);
    expect(await backend.add(record('é'), 100, 20)).toBe('full'); // 11 UTF-8 bytes, 10 characters
    expect(await backend.add(record('c'), 100, 20)).toBe('added');
    const again = (await backend.claim(now + 5, now + 1000, 'w', 10)).find((r) => r.id === 'a');
    await backend.settle({ ...again!, state: 'done', finishedAt: now + 5, lastError: null }, 'w', now + 5);
    await backend.replay('b', now + 6);
    expect(await backend.add(record('d'), 100, 20)).toBe('full');
    // The next start (file) or another process (Redis) counts the same bytes.
    const other = await reopen();
    expect(await other.add(record('d'), 100, 20)).toBe('full');
    expect(await other.add(record('d'), 100, 30)).toBe('added');
  });

  it('settles a run: pending again later, dead, or done; only the claim owner may settle', async () => {
    now = T0;
    const { backend } = await make();
    await backend.add(record('a'), 10);
    await backend.add(record('b'), 10);
    const [a, b] = await backend.claim(now, now + 1000, 'w1', 10);
    expect(await backend.settle({ ...a!, state: 'pending', nextAttemptAt: now + 500, lastError: 'x' }, 'intruder', now)).toBe(false);
    expect(await backend.settle({ ...a!, state: 'pending', nextAttemptAt: now + 500, lastError: 'x' }, 'w1', now)).toBe(true);
    expect(await backend.settle({ ...b!, state: 'dead', finishedAt: now, lastError: 'y' }, 'w1', now)).toBe(true);
    expect(await backend.nextDue()).toBe(now + 500);
    expect(await backend.claim(now + 499, now + 2000, 'w1', 10)).toEqual([]);
    const [again] = await backend.claim(now + 500, now + 2000, 'w1', 10);
    expect(again).toMatchObject({ id: 'a', attempts: 2, lastError: 'x' });
    expect(await backend.settle({ ...again!, state: 'done', finishedAt: now + 600, lastError: null }, 'w1', now + 600)).toBe(true);
    expect(await backend.get('a')).toMatchObject({ state: 'done', attempts: 2, finishedAt: now + 600, lastError: null, keys: ['d:a', 'e:a'], body: '{"id":"a"}' });
    expect(await backend.get('b')).toMatchObject({ state: 'dead', lastError: 'y' });
    expect(await backend.get('zz')).toBeUndefined();
    expect((await backend.list('dead', 10)).map((r) => r.id)).toEqual(['b']);
  });

  it('replays a dead record as source replay from attempt 0, and refuses a pending one or an unknown id', async () => {
    now = T0;
    const { backend } = await make();
    await backend.add(record('a'), 10);
    await backend.add(record('p'), 10);
    const [a] = await backend.claim(now, now + 1000, 'w', 1);
    await backend.settle({ ...a!, state: 'dead', finishedAt: now, lastError: 'bug' }, 'w', now);
    const replayed = await backend.replay('a', now + 5);
    expect(replayed).toMatchObject({ state: 'pending', source: 'replay', attempts: 0, nextAttemptAt: now + 5, lastError: null, finishedAt: null });
    await expect(backend.replay('p', now)).rejects.toMatchObject({ code: 'inbox_not_replayable' });
    await expect(backend.replay('nope', now)).rejects.toBeInstanceOf(InboxError);
  });

  it('purges dead or done records finished before a time', async () => {
    now = T0;
    const { backend } = await make();
    for (const id of ['a', 'b', 'c']) await backend.add(record(id), 10);
    const claimed = await backend.claim(now, now + 1000, 'w', 10);
    await backend.settle({ ...claimed[0]!, state: 'dead', finishedAt: now + 1, lastError: 'e' }, 'w', now);
    await backend.settle({ ...claimed[1]!, state: 'dead', finishedAt: now + 5, lastError: 'e' }, 'w', now);
    await backend.settle({ ...claimed[2]!, state: 'done', finishedAt: now + 1, lastError: null }, 'w', now);
    expect(await backend.purge('dead', now + 5)).toBe(1);
    expect(await backend.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 1 });
  });

  it('keeps done records for a bounded count and time', async () => {
    now = T0;
    const { backend } = await make({ keepDone: 2, keepDoneMs: 1000 });
    for (const id of ['a', 'b', 'c']) await backend.add(record(id), 10);
    const claimed = await backend.claim(now, now + 1000, 'w', 10);
    for (const r of claimed) await backend.settle({ ...r, state: 'done', finishedAt: now, lastError: null }, 'w', now);
    expect((await backend.stats()).done).toBe(2);
    expect(await backend.get('a')).toBeUndefined();
    await backend.add(record('d'), 10);
    const [d] = await backend.claim(now + 2000, now + 3000, 'w', 10);
    await backend.settle({ ...d!, state: 'done', finishedAt: now + 2000, lastError: null }, 'w', now + 2000);
    expect((await backend.list('done', 10)).map((r) => r.id)).toEqual(['d']);
  });

  it('a record whose runner died runs again: after a restart (file) or once its lease ends (Redis)', async () => {
    now = T0;
    const { backend, reopen } = await make();
    await backend.add(record('a'), 10);
    await backend.add(record('b'), 10);
    await backend.claim(now, now + 1000, 'dead-worker', 10);
    const other = await reopen();
    // Redis: still held until the lease ends; the file: one process per file, so the next start takes it at once.
    const at = name === 'redis' ? now + 1000 : now;
    if (name === 'redis') expect(await other.claim(now + 999, now + 2000, 'w2', 10)).toEqual([]);
    const again = await other.claim(at, at + 1000, 'w2', 10);
    expect(again.map((r) => [r.id, r.attempts]).sort()).toEqual([['a', 2], ['b', 2]]);
    expect(await backend.settle({ ...again[0]!, state: 'done', finishedAt: at, lastError: null }, 'dead-worker', at).catch(() => false)).toBe(false);
  });

  it('a record whose process died while running it counts that run, and is dead once it had maxAttempts runs', async () => {
    now = T0;
    const { backend, reopen } = await make({ maxAttempts: 2 });
    await backend.add(record('poison'), 10);
    now += 1;
    await backend.add(record('fine'), 10);
    expect((await backend.claim(now, now + 1000, 'died-1', 1)).map((r) => [r.id, r.attempts])).toEqual([['poison', 1]]);
    // The process ends while the handler runs: the next start (file) or the lease's end (Redis) runs it again.
    now += 1000;
    let other = await reopen();
    const second = await other.claim(now, now + 1000, 'died-2', 2);
    expect(second.map((r) => [r.id, r.attempts]).sort()).toEqual([['fine', 1], ['poison', 2]]);
    await other.settle({ ...second.find((r) => r.id === 'fine')!, state: 'done', finishedAt: now, lastError: null }, 'died-2', now);
    now += 1000;
    other = await reopen();
    // Its second run ended the process too: never a third one.
    expect(await other.claim(now, now + 1000, 'w3', 10)).toEqual([]);
    expect(await other.get('poison')).toMatchObject({ state: 'dead', attempts: 2, nextAttemptAt: null, finishedAt: now, lastError: expect.stringMatching(/process ended while .*running it \(run 2 of 2\)/) });
    expect(await other.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 1 });
    expect(await other.nextDue()).toBeNull();
    // Dead, it frees its place and bytes, and a replay runs it again from attempt 1.
    expect(await other.add(record('next'), 1, 13)).toBe('added');
    await other.replay('poison', now);
    expect((await other.claim(now, now + 1000, 'w3', 10)).map((r) => [r.id, r.attempts]).sort()).toEqual([['next', 1], ['poison', 1]]);
  });

  it('keeps dead records by keepDead and keepDeadMs, tells each one dropped, and never drops a pending one', async () => {
    now = T0;
    const dropped: string[] = [];
    const { backend } = await make({ keepDead: 2, keepDeadMs: 1000, maxAttempts: 1, onDropped: (r) => void dropped.push(`${r.id} ${r.state} ${r.lastError}`) });
    for (const id of ['a', 'b', 'c', 'p']) await backend.add(record(id, now++), 10);
    const claimed = await backend.claim(now, now + 1000, 'w', 3);
    for (const r of claimed) await backend.settle({ ...r, state: 'dead', finishedAt: now, lastError: `bug ${r.id}` }, 'w', now++);
    expect(dropped).toEqual(['a dead bug a']);
    expect((await backend.list('dead', 10)).map((r) => r.id)).toEqual(['c', 'b']);
    expect(await backend.get('p')).toMatchObject({ state: 'pending' });
    // Past keepDeadMs, the next one to die takes the older ones with it, by age.
    now += 5000;
    const [p] = await backend.claim(now, now + 1000, 'w', 1);
    await backend.settle({ ...p!, state: 'dead', finishedAt: now, lastError: 'bug p' }, 'w', now);
    expect(dropped).toEqual(['a dead bug a', 'b dead bug b', 'c dead bug c']);
    expect(await backend.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 0 });
  });

  it('a shared back end renews a running claim for its owner only, and then keeps it past the first lease', async () => {
    now = T0;
    const { backend } = await make();
    if (!backend.extend) return; // a file is one process's: its claims never end
    await backend.add(record('a'), 10);
    await backend.claim(now, now + 1000, 'w1', 10);
    expect(await backend.extend('a', 'w2', now + 5000)).toBe(false);
    expect(await backend.extend('a', 'w1', now + 5000)).toBe(true);
    expect(await backend.claim(now + 1000, now + 2000, 'w2', 10)).toEqual([]);
    expect(await backend.claim(now + 5000, now + 6000, 'w2', 10)).toHaveLength(1);
  });

  it('identifies a record by its id (the event key) and keeps the delivery id beside it, across a reopen', async () => {
    now = T0;
    const { backend, reopen } = await make();
    const first = newRecord('e:video.completed:1', 'video.completed', '{"id":1}', ['e:video.completed:1'], 'webhook', now, 'dlv_A');
    const second = newRecord('e:video.completed:2', 'video.completed', '{"id":2}', ['e:video.completed:2'], 'webhook', now, 'dlv_A');
    expect(await backend.add(first, 10)).toBe('added');
    expect(await backend.add(second, 10)).toBe('added'); // another event under a delivery id already seen
    expect(await backend.add({ ...second, deliveryId: 'dlv_B' }, 10)).toBe('exists');
    const claimed = await backend.claim(now, now + 1000, 'w', 10);
    expect(claimed.map((r) => [r.id, r.deliveryId])).toEqual([['e:video.completed:1', 'dlv_A'], ['e:video.completed:2', 'dlv_A']]);
    await backend.settle({ ...claimed[0]!, state: 'dead', finishedAt: now, lastError: 'bug' }, 'w', now);
    const other = await reopen();
    expect(await other.get('e:video.completed:2')).toMatchObject({ deliveryId: 'dlv_A' });
    expect(await other.replay('e:video.completed:1', now + 1)).toMatchObject({ id: 'e:video.completed:1', deliveryId: 'dlv_A', source: 'replay' });
    expect((await other.list('pending', 10)).map((r) => r.deliveryId)).toContain('dlv_A');
  });

  it('keeps what it acknowledged across a reopen', async () => {
    now = T0;
    const { backend, reopen } = await make();
    await backend.add(record('a'), 10);
    await backend.add(record('b'), 10);
    const [a] = await backend.claim(now, now + 1000, 'w', 1);
    await backend.settle({ ...a!, state: 'dead', finishedAt: now, lastError: 'bug' }, 'w', now);
    const other = await reopen();
    expect(await other.stats()).toEqual({ pending: 1, running: 0, dead: 1, done: 0 });
    expect(await other.get('a')).toMatchObject({ state: 'dead', attempts: 1, lastError: 'bug' });
  });
});
