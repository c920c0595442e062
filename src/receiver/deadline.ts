// A handler's deadline and the context that carries its signal, shared by the direct run (core.ts) and the
// inbox's runner. No Node module.
import { MAX_TIMER_MS, type HostTimers } from './host-timers.js';
import type { InboxSource } from './inbox/record.js';

/** The timers a deadline waits on: the host's, or the inbox's injected ones (a `SimulatedClock` in tests). */
export type DeadlineTimers = HostTimers;

/**
 * One run's deadline: the handler's `signal`, and the race of its promise against the deadline. A promise
 * cannot be stopped, so past the deadline (or at `stop()`) the handler's is abandoned: `race()` rejects at
 * once, the signal tells the handler to stop, and its late settlement reaches nothing. The AbortController
 * is made on the signal's first read: it costs microseconds, most handlers never read it, and the direct
 * run is the hot path.
 */
export class RunDeadline {
  #abort: AbortController | undefined;
  #stopped = false;
  #reason: unknown;
  #reject: ((reason: unknown) => void) | undefined;
  #timer: { handle: unknown; timers: DeadlineTimers } | undefined;

  /** Aborted, with the reason `stop()` was given, once the run is abandoned. */
  get signal(): AbortSignal {
    if (!this.#abort) {
      this.#abort = new AbortController();
      if (this.#stopped) this.#abort.abort(this.#reason);
    }
    return this.#abort.signal;
  }

  /** Settles as `ran` does, or rejects with the reason once `ms` have passed (`reason()`) or `stop()` is called. */
  race(ran: PromiseLike<unknown>, ms: number, timers: DeadlineTimers, reason: () => unknown): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#reason);
    this.#timer = { handle: timers.setTimeout(() => this.stop(reason()), Math.min(ms, MAX_TIMER_MS)), timers };
    return new Promise((resolve, reject) => {
      this.#reject = reject;
      ran.then(
        (value) => (this.#clear(), resolve(value)),
        (error: unknown) => (this.#clear(), reject(error)),
      );
    });
  }

  /** Abandons the run: aborts the signal with `reason` and ends `race()` with it, unless it has ended. */
  stop(reason: unknown): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#reason = reason;
    this.#clear();
    this.#abort?.abort(reason);
    this.#reject?.(reason);
  }

  #clear(): void {
    if (this.#timer) this.#timer.timers.clearTimeout(this.#timer.handle);
    this.#timer = undefined;
  }
}

/** What a handler's context says besides its signal (`WebhookContext` without `signal`). */
export interface ContextFields {
  deliveryId: string;
  rawBody: Uint8Array;
  receivedAt: Date;
  source: InboxSource;
  attempt: number;
}

/**
 * The `WebhookContext` a handler gets: the fields as its own properties, `signal` a getter on the prototype,
 * so the AbortController is made only for a handler that reads it (an own getter would cost more than the
 * fields together).
 */
export class HandlerContext implements ContextFields {
  readonly deliveryId: string;
  readonly rawBody: Uint8Array;
  readonly receivedAt: Date;
  readonly source: InboxSource;
  readonly attempt: number;
  readonly #deadline: RunDeadline;

  constructor({ deliveryId, rawBody, receivedAt, source, attempt }: ContextFields, deadline: RunDeadline) {
    this.deliveryId = deliveryId;
    this.rawBody = rawBody;
    this.receivedAt = receivedAt;
    this.source = source;
    this.attempt = attempt;
    this.#deadline = deadline;
  }

  get signal(): AbortSignal {
    return this.#deadline.signal;
  }
}
