// The deadlines of reconciliation: a signal that aborts after a time or with a parent, and a way to stop
// waiting on a promise that ignores signals (an injected fetch, a body read, a handler). No Node module.
import { ReconcileError } from '../protocol/errors.js';
import { HOST_TIMERS, type HostTimers } from './host-timers.js';

/** Where reconciliation's schedule and deadlines are timed: the host's timers, or a simulated clock's. */
export type ReconcileTimers = HostTimers;

/** The host's timers, unref'd: a scheduled run or a deadline alone must not keep a process alive. */
export const defaultTimers: ReconcileTimers = HOST_TIMERS;
/** A signal and the means to let it go; `clear()` stops the timer and forgets the parents. */
export interface Deadline {
  readonly signal: AbortSignal;
  clear(): void;
}

/**
 * A signal aborted as soon as one of `parents` aborts, with that parent's reason.
 * @example const listing = linked([closed.signal, runDeadline.signal]);
 */
export function linked(parents: ReadonlyArray<AbortSignal | undefined>): Deadline & { abort(reason: unknown): void } {
  const controller = new AbortController();
  const unlink: Array<() => void> = [];
  for (const parent of parents) {
    if (!parent) continue;
    if (parent.aborted) {
      controller.abort(parent.reason);
      break;
    }
    const follow = () => controller.abort(parent.reason);
    parent.addEventListener('abort', follow, { once: true });
    unlink.push(() => parent.removeEventListener('abort', follow));
  }
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    clear: () => {
      for (const undo of unlink.splice(0)) undo();
    },
  };
}

/**
 * A signal aborted with `reason()` once `ms` have passed on `timers`, or as soon as one of `parents`
 * aborts, with that parent's reason.
 * @example const request = deadline(defaultTimers, 30_000, () => new ReconcileError('request_timeout', '…'), [run.signal]);
 */
export function deadline(timers: ReconcileTimers, ms: number, reason: () => Error, parents: ReadonlyArray<AbortSignal | undefined> = []): Deadline {
  const link = linked(parents);
  const handle = link.signal.aborted ? null : timers.setTimeout(() => link.abort(reason()), ms);
  return {
    signal: link.signal,
    clear() {
      if (handle !== null) timers.clearTimeout(handle);
      link.clear();
    },
  };
}

/**
 * The signal's reason as the error a run ends with: a `ReconcileError` (a deadline's, or `stopped` from
 * `close()`); any other reason counts as `stopped`.
 */
export function abortError(signal: AbortSignal): ReconcileError {
  return signal.reason instanceof ReconcileError ? signal.reason : new ReconcileError('stopped', 'The receiver was closed during reconciliation.');
}

/**
 * `promise`, or a rejection with the signal's `abortError` once it aborts, whichever comes first: what
 * ignores the signal is no longer waited for (its own outcome is then dropped).
 * @example const res = await orAbort(fetch(url, { signal }), signal);
 */
export function orAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(abortError(signal));
    if (signal.aborted) {
      promise.catch(() => undefined);
      return stop();
    }
    signal.addEventListener('abort', stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}
