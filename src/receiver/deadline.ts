// A handler's deadline, shared by the direct run (core.ts) and the inbox's runner. No Node module.

/** The timers a deadline waits on: the host's, or the inbox's injected ones (a `SimulatedClock` in tests). */
export interface DeadlineTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The largest delay a host timer keeps: a longer one fires at once (Node, browsers and Workers alike). */
export const MAX_TIMER_MS = 2_147_483_647;

/** The host's timers, unref'd where the host has that: a handler's deadline alone must not keep a process alive. */
export const HOST_TIMERS: DeadlineTimers = {
  setTimeout: (callback, ms) => {
    const handle = globalThis.setTimeout(callback, ms) as unknown as { unref?: () => void };
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => globalThis.clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};

/**
 * Settles as the handler's `ran` does, or rejects with `abort`'s reason once it is aborted: by the timer after
 * `ms` (with `reason()`), or by whoever else holds `abort` (a closing inbox). A promise cannot be stopped,
 * so the handler's is abandoned: its late settlement reaches nothing, and `abort.signal` tells it to stop.
 */
export function raceDeadline(ran: PromiseLike<unknown>, abort: AbortController, ms: number, timers: DeadlineTimers, reason: () => unknown): Promise<unknown> {
  const { signal } = abort;
  const handle = timers.setTimeout(() => abort.abort(reason()), Math.min(ms, MAX_TIMER_MS));
  let stop!: () => void;
  const aborted = new Promise<never>((_resolve, reject) => {
    stop = () => reject(signal.reason);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
  return Promise.race([ran, aborted]).finally(() => {
    timers.clearTimeout(handle);
    signal.removeEventListener('abort', stop);
  });
}
