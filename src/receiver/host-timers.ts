// The host's timers for the receiver's waits (deadlines, retries, scheduled runs), and the longest delay
// they keep. No Node module: the web receiver uses them too.

/** What the receiver's parts wait with: the host's timers by default, a `SimulatedClock` in tests. */
export interface HostTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The largest delay a host timer keeps: a longer one fires at once (Node, browsers and Workers alike). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The host's timers, unref'd where the host has that: a deadline, a retry or a scheduled run alone must not
 * keep a process alive (what must, such as `close()` waiting for handlers, holds a timer of its own).
 */
export const HOST_TIMERS: HostTimers = {
  setTimeout: (callback, ms) => {
    const handle = globalThis.setTimeout(callback, ms) as unknown as { unref?: () => void };
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => globalThis.clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};
