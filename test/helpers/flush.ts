import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Resolves at the event loop's next turn, which comes only once the microtask queue is empty: every
 * promise reaction queued by now, and every one those queue, has run. Code that waits on no I/O and no
 * real timer (a stand-in back end, a frozen `SimulatedClock`) has then done all it can, so the test may
 * assert what has *not* happened. It is no wait for I/O: wait for that on an event, `inbox.idle()` or
 * `expect.poll`.
 * @example
 * const closing = runner.close().then(() => (closed = true));
 * await flushPromises();
 * expect(closed).toBe(false); // close() waits for something the test still holds
 */
export function flushPromises(): Promise<void> {
  return nextTurn();
}
