// A run's deadline and the context carrying its signal, on the simulated clock.
import { expect, it } from 'vitest';
import { HandlerContext, RunDeadline } from '../../src/receiver/deadline.js';
import { SimulatedClock } from '../../src/service/core/clock.js';

it('race() rejects at the deadline with the reason, aborting a signal read before or after, and ignores the late end', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const early = new RunDeadline();
  const signal = early.signal;
  let finish!: (value: string) => void;
  const raced = early.race(new Promise<string>((resolve) => (finish = resolve)), 1_000, clock, () => new Error('late'));
  const outcome = raced.then(
    () => 'resolved',
    (error: Error) => error.message,
  );
  await clock.advance(999);
  expect(signal.aborted).toBe(false);
  await clock.advance(1);
  expect(await outcome).toBe('late');
  expect(signal.reason).toEqual(new Error('late'));
  finish('too late'); // reaches nothing
  // A signal first read once the run is abandoned is aborted too, with the same reason.
  const late = new RunDeadline();
  void late.race(new Promise(() => undefined), 10, clock, () => 'timed out').catch(() => undefined);
  await clock.advance(10);
  expect([late.signal.aborted, late.signal.reason]).toEqual([true, 'timed out']);
});

it('stop() ends the race at once and clears its timer; a run that ends first keeps its signal unaborted', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const stopped = new RunDeadline();
  const raced = stopped.race(new Promise(() => undefined), 60_000, clock, () => 'deadline');
  stopped.stop('closing');
  await expect(raced).rejects.toBe('closing');
  expect(stopped.signal.reason).toBe('closing');
  const quick = new RunDeadline();
  expect(await quick.race(Promise.resolve(42), 1_000, clock, () => 'deadline')).toBe(42);
  await clock.advance(1_000);
  expect(quick.signal.aborted).toBe(false);
  await expect(new RunDeadline().race(Promise.reject(new Error('boom')), 1_000, clock, () => 'deadline')).rejects.toThrow('boom');
});

it('HandlerContext: the fields as own properties, signal from the deadline (a spread copy leaves it out)', () => {
  const deadline = new RunDeadline();
  const fields = { deliveryId: 'dlv_1', rawBody: new Uint8Array([1]), receivedAt: new Date(0), source: 'webhook' as const, attempt: 2 };
  const context = new HandlerContext(fields, deadline);
  expect({ ...context }).toEqual(fields);
  expect(context.signal).toBe(deadline.signal);
  const { signal } = context;
  expect(signal.aborted).toBe(false);
});
