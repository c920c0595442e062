import { AsyncResource } from 'node:async_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The timers a simulated clock arms on the real one; injectable so its own tests drive them. */
export interface RealTimers {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface SimulatedClockOptions {
  /**
   * Where simulated time starts, in milliseconds since the epoch. @default the real time at creation
   */
  start?: number;
  /**
   * `true`: time stands still between `advance()` calls, so a test decides every step (what is due at the
   * current instant still runs at once). `false`: it runs
   * with the real clock, ahead of it by what `advance()` added (what `cliphook serve` uses). @default false
   */
  frozen?: boolean;
  /**
   * Awaited after each timer `advance()` fires, so the work it started (a clip's webhook attempt, a store
   * write) can schedule what follows before time moves on. @default two turns of the event loop
   */
  settle?: () => Promise<void>;
  /** @default Date.now and the global timers, unref'd */
  real?: RealTimers;
}

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

// Node's timers overflow above 2^31-1 ms (about 24.8 days) and fire at once; longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

const REAL: RealTimers = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

const twoTurns = async () => {
  await nextTurn();
  await nextTurn();
};

/**
 * The service's one source of time, as Stripe's test clocks are: every time rule (clip lifecycle, webhook
 * retries, link expiry, idempotency and rate windows) reads `now()` or waits on `setTimeout()` here, and
 * `advance()` moves it forward, firing what falls due in time order, each at its own instant. It fits
 * the emitter's `clock` option, so advancing also brings webhook retries due.
 * @example
 * const clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-01-01T00:00:00Z') });
 * clock.setTimeout(() => console.log(new Date(clock.now()).toISOString()), 90_000);
 * await clock.advance(120_000); // logs 2026-01-01T00:01:30.000Z
 */
export class SimulatedClock {
  readonly frozen: boolean;
  readonly #real: RealTimers;
  readonly #settle: () => Promise<void>;
  /** Pending timers in a binary min-heap by (at, seq); cancelled ones are dropped when they surface. */
  readonly #heap: Timer[] = [];
  /** Simulated minus real time (running), or the simulated time itself (frozen). */
  #offset: number;
  #seq = 0;
  /** The real timer armed for the earliest timer, and the real time it fires at. */
  #armed: { handle: unknown; at: number } | null = null;
  /** Further settle conditions registered by the service (its webhooks in flight). */
  readonly #settlers = new Set<() => Promise<void>>();
  /** `advance()` calls run one after another. */
  #advancing: Promise<void> = Promise.resolve();
  /** Told after each advance (the service keeps how far ahead it is in its data file). */
  readonly #advanced = new Set<() => void>();
  #stopped = false;
  /**
   * Timers fire in the async context the clock was made in, not in the one that armed or advanced it: a
   * clip that ends during a request's `advance()` is no change of that request's (the store's units).
   */
  readonly #scope = new AsyncResource('cliphook.SimulatedClock');

  constructor({ start, frozen = false, settle = twoTurns, real = REAL }: SimulatedClockOptions = {}) {
    if (start !== undefined && !Number.isFinite(start)) throw new TypeError(`Expected \`start\` to be milliseconds since the epoch, got ${String(start)}.`);
    if (typeof settle !== 'function') throw new TypeError('Expected `settle` to be a function.');
    this.frozen = frozen;
    this.#real = real;
    this.#settle = settle;
    const begin = start ?? real.now();
    this.#offset = frozen ? begin : begin - real.now();
  }

  /** Simulated milliseconds since the epoch. */
  now(): number {
    return this.frozen ? this.#offset : this.#real.now() + this.#offset;
  }

  /** How far simulated time is ahead of real time, in milliseconds: what `advance()` added to a running clock. */
  get ahead(): number {
    return this.now() - this.#real.now();
  }

  /** Timers waiting to fire. */
  get timers(): number {
    return this.#heap.filter((timer) => !timer.cancelled).length;
  }

  /** Runs `callback` once simulated time reaches now + `ms`. */
  setTimeout(callback: () => void, ms: number): unknown {
    const timer: Timer = { at: this.now() + Math.max(0, Number.isFinite(ms) ? ms : 0), seq: this.#seq++, callback, cancelled: false };
    this.#push(timer);
    this.#arm();
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle && typeof handle === 'object' && 'cancelled' in handle) (handle as Timer).cancelled = true;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way at its own instant, in order,
   * settling after each. Resolves once time has reached the target and what it fired has settled.
   */
  advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) return Promise.reject(new RangeError(`Expected a number of milliseconds >= 0, got ${String(ms)}.`));
    const run = this.#advancing.then(() => this.#advanceNow(ms));
    this.#advancing = run.catch(() => undefined);
    return run;
  }

  /**
   * Adds a condition `advance()` waits for after each timer it fires, as Stripe's test clocks wait for the
   * work an advance starts: the service registers its webhook attempts in flight, so a retry schedule
   * walked by `advance()` sees each attempt's outcome before time moves on. Returns the unregister.
   */
  settleWith(settle: () => Promise<void>): () => void {
    this.#settlers.add(settle);
    return () => void this.#settlers.delete(settle);
  }

  /** Calls `listener` each time an `advance()` has moved time (before it resolves). Returns the unregister. */
  onAdvance(listener: () => void): () => void {
    this.#advanced.add(listener);
    return () => void this.#advanced.delete(listener);
  }

  /** Stops arming real timers (the service is closing); pending timers never fire. */
  stop(): void {
    this.#stopped = true;
    if (this.#armed) this.#real.clearTimeout(this.#armed.handle);
    this.#armed = null;
    this.#heap.length = 0;
  }

  async #advanceNow(ms: number): Promise<void> {
    const target = this.now() + ms;
    for (let timer = this.#peek(); timer && timer.at <= target; timer = this.#peek()) {
      this.#moveTo(timer.at);
      this.#fire(this.#pop()!);
      await this.#settle();
      for (const settle of this.#settlers) await settle();
    }
    this.#moveTo(target);
    this.#arm();
    for (const listener of this.#advanced) listener();
  }

  /** Sets simulated time to `at`, never backwards. */
  #moveTo(at: number): void {
    if (at <= this.now()) return;
    this.#offset = this.frozen ? at : at - this.#real.now();
  }

  #fire(timer: Timer): void {
    try {
      this.#scope.runInAsyncScope(timer.callback);
    } catch (error) {
      // A timer's failure is its owner's to report; it must not stop the clock or the timers behind it.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  /** Keeps one real timer armed for the earliest pending timer (running clocks only). */
  #arm(): void {
    if (this.#stopped) return;
    const next = this.#peek();
    // Frozen time stands still, but what is due at this instant still runs (a webhook due now goes now).
    const wait = next && (!this.frozen || next.at <= this.now()) ? next : undefined;
    // Keyed by the real time it fires at: an advance brings the same timer nearer, and its real timer must follow.
    const key = wait ? (this.frozen ? 0 : wait.at - this.#offset) : null;
    if (this.#armed && wait && this.#armed.at === key) return;
    if (this.#armed) this.#real.clearTimeout(this.#armed.handle);
    this.#armed = null;
    if (!wait) return;
    const delay = Math.min(Math.max(0, wait.at - this.now()), MAX_TIMER_MS);
    const handle = this.#real.setTimeout(() => {
      this.#armed = null;
      // Real time has reached it: fire what is due, in order, then arm for the rest.
      const now = this.now();
      for (let due = this.#peek(); due && due.at <= now; due = this.#peek()) this.#fire(this.#pop()!);
      this.#arm();
    }, delay);
    this.#armed = { handle, at: key! };
  }

  #peek(): Timer | undefined {
    while (this.#heap.length > 0 && this.#heap[0]!.cancelled) this.#pop();
    return this.#heap[0];
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): Timer | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
        if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
        if (least === i) break;
        [heap[i], heap[least]] = [heap[least]!, heap[i]!];
        i = least;
      }
    }
    return top;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
