// Issue 30 item 1: the inbox's worker on a stand-in back end, on the simulated clock.
import { describe, expect, it, vi } from 'vitest';
import { HandlerTimeoutError } from '../../../src/index.js';
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

function runner(records: InboxRecord[], clock: SimulatedClock, dispatch: RunnerOptions['dispatch'], concurrency = 1, options: Partial<RunnerOptions> = {}) {
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
    handlerTimeout: 60_000,
    dispatch,
    ready: () => true,
    onError: () => undefined,
    ...options,
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
    handlerTimeout: 60_000,
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

describe('a handler past its deadline', () => {
  // A lease longer than every deadline here: no renewal (which the stand-in leaves unanswered) falls due.
  const leaseMs = 600_000;
  const records = (clock: SimulatedClock, ...ids: string[]) => ids.map((id) => newRecord(`e:${id}`, 'video.completed', `{"id":"${id}"}`, [`e:${id}`], 'webhook', clock.now(), `dlv_${id}`));

  it('fails at handlerTimeout, reaching onError with handler_timeout and aborting its signal, and frees its slot though it never settles', async () => {
    const clock = new SimulatedClock({ frozen: true });
    const signals = new Map<string, AbortSignal>();
    const errors: Array<[unknown, string | undefined]> = [];
    const { runner: run, writes } = runner(
      records(clock, 'hung', 'next'),
      clock,
      (_event, { deliveryId, signal }) => {
        signals.set(deliveryId, signal);
        return deliveryId === 'dlv_hung' ? new Promise<void>(() => undefined) : undefined;
      },
      1,
      { leaseMs, handlerTimeout: 5_000, onError: (error, context) => void errors.push([error, context?.deliveryId]) },
    );
    run.kick();
    await run.idle(false);
    expect([...signals.keys()]).toEqual(['dlv_hung']);
    await clock.advance(4_999);
    await flushPromises();
    expect([...signals.keys()]).toEqual(['dlv_hung']); // the slot is still held
    expect(signals.get('dlv_hung')!.aborted).toBe(false);
    await clock.advance(1);
    await flushPromises(); // the stand-in does no I/O: the runner has done all it can
    // The slot is free: the next event ran, and the hung one's outcome is a failed attempt, due after the backoff.
    expect([...signals.keys()]).toEqual(['dlv_hung', 'dlv_next']);
    expect(writes.map((w) => [w.record.id, w.record.state, w.record.nextAttemptAt])).toEqual([
      ['e:hung', 'pending', clock.now() + DEFAULT_BACKOFF.minTimeout],
      ['e:next', 'done', null],
    ]);
    expect(writes[0]!.record.lastError).toMatch(/ran past `inbox.handlerTimeout` \(5000 ms\)/);
    const [error, deliveryId] = errors[0]!;
    expect(deliveryId).toBe('dlv_hung');
    expect(error).toBeInstanceOf(HandlerTimeoutError);
    expect(error).toMatchObject({ code: 'handler_timeout', limit: 'handlerTimeout', ms: 5_000 });
    expect(signals.get('dlv_hung')!.reason).toBe(error);
    expect(signals.get('dlv_next')!.aborted).toBe(false);
    expect(run.active).toBe(0);
    for (const write of writes) write.finish();
    await run.idle();
  });

  it('writes no second outcome when the abandoned handler settles late, resolved or rejected', async () => {
    const clock = new SimulatedClock({ frozen: true });
    const ends: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
    const errors: unknown[] = [];
    const { runner: run, writes } = runner(
      records(clock, 'a', 'b'),
      clock,
      () => new Promise<void>((resolve, reject) => ends.push({ resolve, reject })),
      2,
      { leaseMs, handlerTimeout: 1_000, onError: (error) => void errors.push(error) },
    );
    run.kick();
    await run.idle(false);
    await clock.advance(1_000);
    await flushPromises();
    expect(writes.map((w) => [w.record.id, w.record.state])).toEqual([['e:a', 'pending'], ['e:b', 'pending']]);
    for (const write of writes) write.finish();
    await run.idle();
    ends[0]!.resolve();
    ends[1]!.reject(new Error('too late'));
    await flushPromises();
    await run.idle();
    expect(writes).toHaveLength(2);
    expect(errors).toHaveLength(2);
    expect(errors.every((error) => error instanceof HandlerTimeoutError)).toBe(true);
  });

  it('is dead past retries when every run times out', async () => {
    const clock = new SimulatedClock({ frozen: true });
    const { runner: run, writes } = runner(records(clock, 'a'), clock, () => new Promise<void>(() => undefined), 1, {
      leaseMs,
      handlerTimeout: 1_000,
      backoff: { ...DEFAULT_BACKOFF, retries: 0 },
    });
    run.kick();
    await run.idle(false);
    await clock.advance(1_000);
    await flushPromises();
    expect(writes.map((w) => [w.record.state, w.record.finishedAt])).toEqual([['dead', clock.now()]]);
    writes[0]!.finish();
    await run.idle();
  });

  it('close() waits closeTimeout for a hung handler, then aborts its signal and returns without an outcome for it', async () => {
    const clock = new SimulatedClock({ frozen: true });
    let signal!: AbortSignal;
    const errors: unknown[] = [];
    const { runner: run, writes } = runner(records(clock, 'a'), clock, (_event, context) => ((signal = context.signal), new Promise<void>(() => undefined)), 1, {
      leaseMs,
      closeTimeout: 2_000,
      handlerTimeout: 60_000,
      onError: (error) => void errors.push(error),
    });
    run.kick();
    await run.idle(false);
    let closed = false;
    const closing = run.close().then(() => (closed = true));
    await clock.advance(1_999);
    expect(closed).toBe(false);
    expect(signal.aborted).toBe(false);
    await clock.advance(1);
    await closing;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ code: 'handler_timeout', limit: 'closeTimeout', ms: 2_000 });
    // Left running, as a crash leaves it: the next start (file) or the lease's end (Redis) runs it again.
    expect(writes).toEqual([]);
    expect(errors).toEqual([]);
    expect(run.active).toBe(0);
  });
});
