// Issue 30 item 1: the inbox's worker on a stand-in back end, on the simulated clock.
import { expect, it, vi } from 'vitest';
import { DEFAULT_BACKOFF } from '../../../src/receiver/inbox/backoff.js';
import { newRecord, type InboxBackend, type InboxRecord } from '../../../src/receiver/inbox/record.js';
import { InboxRunner } from '../../../src/receiver/inbox/runner.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';

/** Hands out the records it was given, once each; its writes finish only when the test says so. */
function standIn(records: InboxRecord[]) {
  const writes: Array<{ record: InboxRecord; finish: () => void }> = [];
  const backend: InboxBackend = {
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
  return { backend, writes };
}

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
  await new Promise((resolve) => setTimeout(resolve, 10));
  expect(closed).toBe(false);
  for (const write of writes) write.finish();
  await closing;
  expect(closed).toBe(true);
});
