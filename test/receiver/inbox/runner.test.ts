// Issue 30 item 1: the inbox's worker on a stand-in back end, on the simulated clock.
import { expect, it, vi } from 'vitest';
import { DEFAULT_BACKOFF } from '../../../src/receiver/inbox/backoff.js';
import { newRecord, type InboxBackend, type InboxRecord } from '../../../src/receiver/inbox/record.js';
import { InboxRunner, type RunnerOptions } from '../../../src/receiver/inbox/runner.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { flushPromises } from '../../helpers/flush.js';

/** Hands out the records it was given, once each; its writes (and lease renewals) finish only when the test says so. */
function standIn(records: InboxRecord[]) {
  const writes: Array<{ record: InboxRecord; finish: () => void }> = [];
  const renewals: Array<{ id: string; answer: (kept: boolean) => void }> = [];
  const backend: InboxBackend = {
    extend: (id) => new Promise<boolean>((answer) => renewals.push({ id, answer })),
    where: 'stand-in',
    open: async () => undefined,
    add: async () => 'added',
    claim: async (_now, _lease, _owner, limit) => records.splice(0, limit).map((record) => ({ ...record, state: 'running', attempts: record.attempts + 1 })),
    settle: (record) => new Promise<boolean>((resolve) => writes.push({ record: { ...record }, finish: () => resolve(true) })),
    get: async () => undefined,
    list: async () => [],
    replay: async () => {
      throw new Error('not here');
    },
    purge: async () => 0,
    stats: async () => ({ pending: records.length, running: 0, dead: 0, done: 0 }),
    nextDue: async () => null,
    close: async () => undefined,
  };
  return { backend, writes, renewals };
}

function runner(records: InboxRecord[], clock: SimulatedClock, dispatch: RunnerOptions['dispatch'], concurrency = 1) {
  const stand = standIn(records);
  const run = new InboxRunner({
    backend: stand.backend,
    concurrency,
    backoff: DEFAULT_BACKOFF,
    leaseMs: 1_000,
    clock: () => clock.now(),
    timers: clock,
    pollMs: null,
    closeTimeout: 1_000,
    dispatch,
    ready: () => true,
    onError: () => undefined,
  });
  return { ...stand, runner: run };
}

/** Whether `promise` has settled once the promises queued now have run. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await flushPromises();
  return settled;
}

it('idle() resolves once the handlers have run and their outcomes are written, not before; idle(false) does not wait for handlers', async () => {
  // A test waits for "finished" on idle(), then asserts what did not happen, instead of sleeping.
  const clock = new SimulatedClock({ frozen: true });
  const records = ['a', 'b'].map((id) => newRecord(id, 'video.completed', `{"id":"${id}"}`, [id], 'webhook', clock.now()));
  const releases: Array<() => void> = [];
  const ran: string[] = [];
  const { runner: run, writes } = runner(records, clock, (_event, { deliveryId }) => new Promise<void>((resolve) => (ran.push(deliveryId), releases.push(resolve))), 2);
  run.kick();
  const idle = run.idle();
  await run.idle(false); // the look for due records has finished: both handlers started
  expect(ran).toEqual(['a', 'b']);
  expect(await settledYet(idle)).toBe(false);
  for (const release of releases) release();
  await flushPromises();
  expect(writes.map((w) => w.record.state)).toEqual(['done', 'done']);
  expect(await settledYet(idle)).toBe(false); // the writes are in flight
  expect(await settledYet(run.idle(false))).toBe(false);
  for (const write of writes) write.finish();
  await idle;
  await run.idle(false);
  expect(ran).toEqual(['a', 'b']);
});

it('idle(false) waits for a lease renewal in flight while the handler goes on running', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const records = [newRecord('a', 'video.completed', '{"id":1}', ['a'], 'webhook', clock.now())];
  let release!: () => void;
  const { runner: run, renewals } = runner(records, clock, () => new Promise<void>((resolve) => (release = resolve)));
  run.kick();
  await run.idle(false);
  await clock.advance(500); // half the lease: the renewal is sent
  expect(renewals.map((r) => r.id)).toEqual(['a']);
  const quiet = run.idle(false);
  expect(await settledYet(quiet)).toBe(false);
  renewals[0]!.answer(true);
  await quiet;
  expect(await settledYet(run.idle())).toBe(false); // the handler still runs
  release();
});

it('frees a handler slot once the outcome is handed to the back end, not once its write has finished', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const records = ['a', 'b', 'c'].map((id) => newRecord(id, 'video.completed', `{"id":"${id}"}`, [id], 'webhook', clock.now()));
  const { backend, writes } = standIn(records);
  const ran: string[] = [];
  const runner = new InboxRunner({
    backend,
    concurrency: 1,
    backoff: DEFAULT_BACKOFF,
    leaseMs: 60_000,
    clock: () => clock.now(),
    timers: clock,
    pollMs: null,
    closeTimeout: 1_000,
    dispatch: (_event, { deliveryId }) => void ran.push(deliveryId),
    ready: () => true,
    onError: () => undefined,
  });
  runner.kick();
  await vi.waitFor(() => expect(ran).toEqual(['a', 'b', 'c']));
  expect(writes.map((w) => [w.record.id, w.record.state])).toEqual([['a', 'done'], ['b', 'done'], ['c', 'done']]);
  // close() waits for the writes in flight.
  let closed = false;
  const closing = runner.close().then(() => (closed = true));
  // The stand-in does no I/O and the clock is frozen: once the promises have run, close() has done all it can.
  await flushPromises();
  expect(closed).toBe(false);
  for (const write of writes) write.finish();
  await closing;
  expect(closed).toBe(true);
});
