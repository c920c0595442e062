// The memory inbox for tests: beside a MemoryDeliveryStore (or with `memory: true`) it writes nothing, goes
// with its store, and two receivers at once (two test files, two workers) never share it.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createReceiver, createTestWebhook, MemoryDeliveryStore, type DeliveryStore, type WebhookEvent } from '../../../src/index.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { SECRET } from '../../helpers/webhooks.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function app(store: DeliveryStore, inbox: Parameters<typeof createReceiver>[0]['inbox'] = true, { fail = false, clock = Date.now } = {}) {
  const receiver = createReceiver({ secret: SECRET, store, inbox, clock });
  cleanups.push(() => receiver.close());
  const ran: number[] = [];
  receiver.onAny((event: WebhookEvent) => {
    if (fail) throw new Error('not yet');
    ran.push(event.id);
  });
  receiver.onError(() => undefined);
  const send = async () => {
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    expect((await receiver.receive(Buffer.from(hook.body), hook.headers)).status).toBe(202);
    return hook.event.id;
  };
  return { receiver, ran, send };
}

it('inbox: true beside a MemoryDeliveryStore runs from memory and writes nothing, not even .cliphook/', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-memory-inbox-'));
  const cwd = process.cwd();
  process.chdir(dir);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  cleanups.push(() => process.chdir(cwd));
  const { receiver, ran, send } = app(new MemoryDeliveryStore());
  expect(receiver.inbox!.where).toBe('memory');
  const id = await send();
  await receiver.inbox!.idle();
  expect(ran).toEqual([id]);
  expect(await receiver.inbox!.get(`e:video.completed:${id}`)).toMatchObject({ state: 'done', attempts: 1 });
  await receiver.close();
  expect(await readdir(dir)).toEqual([]);
});

it('two receivers at once each have their own, and a fresh store starts empty: a test passes on every run', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const run = async () => {
    const one = app(new MemoryDeliveryStore(), { timers: clock });
    const two = app(new MemoryDeliveryStore(), { timers: clock });
    expect(await one.receiver.inbox!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 0 });
    await one.send();
    await two.send();
    await two.send();
    await Promise.all([one.receiver.inbox!.idle(), two.receiver.inbox!.idle()]);
    expect([(await one.receiver.inbox!.stats()).done, (await two.receiver.inbox!.stats()).done]).toEqual([1, 2]);
    await Promise.all([one.receiver.close(), two.receiver.close()]);
  };
  await run();
  await run(); // a second run of the same test sees the same counts
});

it('lives as long as its store: a receiver made again on it runs what the last one left, and two at once on one store are refused', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const store = new MemoryDeliveryStore({ clock: () => clock.now() });
  const now = () => clock.now();
  const first = app(store, { timers: clock, minTimeout: 60_000 }, { fail: true, clock: now });
  const id = await first.send();
  await first.receiver.inbox!.idle();
  expect(await first.receiver.inbox!.stats()).toMatchObject({ pending: 1 }); // failed once, waits for its retry
  expect(() => createReceiver({ secret: SECRET, store, inbox: true })).toThrow(/already open by another receiver/);
  await first.receiver.close();
  const next = app(store, { timers: clock, minTimeout: 60_000 }, { clock: now });
  await next.receiver.inbox!.idle(); // opened, and waiting for the retry's time
  expect(next.ran).toEqual([]);
  await clock.advance(60_000);
  await next.receiver.inbox!.idle();
  expect(next.ran).toEqual([id]);
  expect(await next.receiver.inbox!.get(`e:video.completed:${id}`)).toMatchObject({ state: 'done', attempts: 2 });
});

it('inbox: { memory: true } keeps it in memory beside any store; with file, redis or fsync, or beside a memory store with fsync, a TypeError', async () => {
  const memory = new MemoryDeliveryStore();
  // A store of the app's own making: without `memory` its inbox would be .cliphook/inbox.json.
  const store: DeliveryStore = {
    claim: (keys, leaseMs, owner) => memory.claim(keys, leaseMs, owner),
    complete: (keys) => memory.complete(keys),
    release: (keys, owner) => memory.release(keys, owner),
    close: () => memory.close(),
  };
  const { receiver, ran, send } = app(store, { memory: true });
  expect(receiver.inbox!.where).toBe('memory');
  const id = await send();
  await receiver.inbox!.idle();
  expect(ran).toEqual([id]);
  const make = (inbox: unknown) => () => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: inbox as never });
  expect(make({ memory: true, file: 'inbox.json' })).toThrow(/`inbox.memory` alone/);
  expect(make({ memory: true, redis: 'redis://127.0.0.1:1' })).toThrow(/`inbox.memory` alone/);
  expect(make({ memory: true, fsync: false })).toThrow(/`inbox.memory` alone/);
  expect(make({ memory: 'yes' })).toThrow(/`inbox.memory` to be a boolean/);
  expect(make({ fsync: true })).toThrow(/no `inbox.fsync` beside a MemoryDeliveryStore/);
});
