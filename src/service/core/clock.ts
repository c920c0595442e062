import { AsyncResource } from 'node:async_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ContextSlot } from './context.js';
import { Lanes, peek, pop, push, type Timer } from './lanes.js';

/** A clock the state machines arm their timers on; `as` (a `SimulatedClock`'s) puts them on an account's own time. */
export interface LaneClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  as?<T>(account: number | null, fn: () => T): T;
}

/**
 * Runs `fn` on `account`'s time (`null`: the service's own) when the clock has accounts' times, else as it
 * is: a clip, image job or asset is armed on its own account's time whoever arms it (a restart, a rollback,
 * a seed by the admin), and a service-wide timer on the service's whoever triggers it.
 */
export function onTimeOf<T>(clock: LaneClock, account: number | null, fn: () => T): T {
  return clock.as ? clock.as(account, fn) : fn();
}

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


/**
 * Something else that falls due on an account's time besides its timers: the service's webhook retries,
 * which its emitter keeps on the service's time. An account's `advance()` asks it what is due next on the
 * account's time and has it fire that, in order with the account's timers.
 */
export interface LaneSource {
  /** When the next thing of `account` falls due, on the account's time; undefined for nothing. */
  next(account: number): number | undefined;
  /** Makes what is due for `account` now happen. */
  fire(account: number): void;
}

/** Where the account a request or a timer acts for is kept: a holder, so admitting a key sets it for the whole request. */
interface Acting {
  account: number | null;
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
 *
 * Each account has its own time besides: the service's plus the account's lead. `now()` and
 * `setTimeout()` act for the account of the current request or timer (`as()`, `scope()` + `actFor()`),
 * `advance(ms, { account })` moves one account's time only, and `advance(ms)` the service's and so every
 * account's. A timer fires on its account's time and acts for that account.
 * @example
 * const clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-01-01T00:00:00Z') });
 * clock.setTimeout(() => console.log(new Date(clock.now()).toISOString()), 90_000);
 * await clock.advance(120_000); // logs 2026-01-01T00:01:30.000Z
 */
export class SimulatedClock {
  readonly frozen: boolean;
  readonly #real: RealTimers;
  readonly #settle: () => Promise<void>;
  /** The service's own time and each account's, with their pending timers (lanes.ts). */
  readonly #lanes = new Lanes();
  /** The account the current request or timer acts for. */
  readonly #acting = new ContextSlot<Acting>();
  readonly #sources = new Set<LaneSource>();
  /** Simulated minus real time (running), or the simulated time itself (frozen), of the service's own time. */
  #offset: number;
  #seq = 0;
  /** The real timer armed for the earliest timer, and the real time it fires at. */
  #armed: { handle: unknown; at: number } | null = null;
  /** Further settle conditions registered by the service (its webhooks in flight), told whose advance asks. */
  readonly #settlers = new Set<(account: number | null) => Promise<void>>();
  /**
   * One account's `advance()` calls run one after another, after any of the service's;
   * the service's run after every account's. Two accounts' advances never wait for each other.
   */
  #advancing: Promise<void> = Promise.resolve();
  readonly #laneAdvancing = new Map<number, Promise<void>>();
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

  /**
   * Simulated milliseconds since the epoch: the time of the account the current request or timer acts for
   * (each account reads its own time), else the service's.
   */
  now(): number {
    return this.#baseNow() + this.#lanes.leadOf(this.account);
  }

  /** The simulated time of `account` (`null`: the service's own), whoever asks. */
  nowOf(account: number | null): number {
    return this.#baseNow() + this.#lanes.leadOf(account);
  }

  /** How far `account`'s time is ahead of the service's, in milliseconds (0 for an account never advanced alone). */
  leadOf(account: number): number {
    return this.#lanes.leadOf(account);
  }

  /** The accounts whose time is ahead of the service's, and by how much (what a restart restores). */
  leads(): Map<number, number> {
    return this.#lanes.leads();
  }

  /** Puts `account`'s time `ms` ahead of the service's, firing nothing (a restart restoring what it kept). */
  restoreLead(account: number, ms: number): void {
    if (!Number.isSafeInteger(account) || !(Number.isFinite(ms) && ms >= 0)) throw new TypeError(`Expected an account id and a lead >= 0, got ${account} and ${ms}.`);
    this.#lanes.of(account).lead = ms;
    this.#arm();
  }

  /** The account the current request or timer acts for; `null` for the service itself. */
  get account(): number | null {
    return this.#acting.get()?.account ?? null;
  }

  /**
   * Runs `fn` acting for `account`: `now()` reads its time, and the timers `fn` arms run on its time and
   * act for it when they fire.
   * @example clock.as(2, () => clock.advance(60_000)) // moves account 2's time only
   */
  as<T>(account: number | null, fn: () => T): T {
    return this.#acting.run({ account }, fn);
  }

  /** Runs `fn` as a request acting for nobody yet; `actFor()` inside it names the account once its key is known. */
  scope<T>(fn: () => T): T {
    return this.#acting.run({ account: null }, fn);
  }

  /** Inside `scope()` (a request), acts for `account` from now on; elsewhere it does nothing. */
  actFor(account: number): void {
    const acting = this.#acting.get();
    if (acting) acting.account = account;
  }

  /**
   * The service's own time whatever the caller acts for: what the webhook emitter runs on, as one queue
   * serves every account.
   */
  get base(): { now(): number; setTimeout(callback: () => void, ms: number): unknown; clearTimeout(handle: unknown): void } {
    return {
      now: () => this.#baseNow(),
      setTimeout: (callback, ms) => this.as(null, () => this.setTimeout(callback, ms)),
      clearTimeout: (handle) => this.clearTimeout(handle),
    };
  }

  /** Registers what else falls due on accounts' times (webhook retries). Returns the unregister. */
  addLaneSource(source: LaneSource): () => void {
    this.#sources.add(source);
    return () => void this.#sources.delete(source);
  }

  /** How far the service's simulated time is ahead of real time, in milliseconds: what `advance()` added to a running clock. */
  get ahead(): number {
    return this.#baseNow() - this.#real.now();
  }

  /** Timers waiting to fire. */
  get timers(): number {
    return this.#lanes.pending();
  }

  /** Runs `callback` once simulated time reaches now + `ms`, on the time of the account acted for. */
  setTimeout(callback: () => void, ms: number): unknown {
    const account = this.account;
    const timer: Timer = { at: this.nowOf(account) + Math.max(0, Number.isFinite(ms) ? ms : 0), seq: this.#seq++, callback, lane: account, cancelled: false };
    push(this.#lanes.of(account).heap, timer);
    this.#arm();
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle && typeof handle === 'object' && 'cancelled' in handle) (handle as Timer).cancelled = true;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way at its own instant, in order,
   * settling after each. Resolves once time has reached the target and what it fired has settled. With
   * `account`, only that account's time moves (as a Stripe test clock moves only what is attached
   * to it): its timers and what its lane sources hold; every other account's time stays. It runs after the
   * account's earlier advances and any of the service's, never behind another account's.
   */
  advance(ms: number, { account }: { account?: number | null } = {}): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) return Promise.reject(new RangeError(`Expected a number of milliseconds >= 0, got ${String(ms)}.`));
    if (account === undefined || account === null) {
      const run = Promise.all([this.#advancing, ...this.#laneAdvancing.values()]).then(() => this.#advanceNow(ms));
      this.#advancing = run.catch(() => undefined);
      return run;
    }
    const run = Promise.all([this.#advancing, this.#laneAdvancing.get(account)]).then(() => this.#advanceLane(account, ms));
    const done = run.catch(() => undefined);
    this.#laneAdvancing.set(account, done);
    // Forgotten once it is the account's last: the map holds accounts with an advance waiting or running only.
    void done.then(() => this.#laneAdvancing.get(account) === done && this.#laneAdvancing.delete(account));
    return run;
  }

  /**
   * Adds a condition `advance()` waits for after each timer it fires, as Stripe's test clocks wait for the
   * work an advance starts: the service registers its webhook attempts in flight, so a retry schedule
   * walked by `advance()` sees each attempt's outcome before time moves on. It is told whose advance asks:
   * an account's (wait for that account's work only) or `null`, the service's (wait for
   * every account's). Returns the unregister.
   */
  settleWith(settle: (account: number | null) => Promise<void>): () => void {
    this.#settlers.add(settle);
    return () => void this.#settlers.delete(settle);
  }

  /** Calls `listener` each time an `advance()` has moved time (before it resolves). Returns the unregister. */
  onAdvance(listener: () => void): () => void {
    this.#advanced.add(listener);
    return () => void this.#advanced.delete(listener);
  }

  /**
   * Drops a running clock's lead: simulated time is real time again (`POST /test_helpers/reset`). Timers keep their
   * simulated due times, so they fire that much later in real time. A frozen clock is left as it is.
   */
  rewind(): void {
    this.clearLeads();
    if (this.frozen) return;
    this.#offset = 0;
    this.#arm();
  }

  /** Forgets an account (deleted): its time and its pending timers, which never fire. */
  forget(account: number): void {
    if (this.#lanes.forget(account)) this.#arm();
  }

  /** Timers waiting to fire on `account`'s time. */
  timersOf(account: number): number {
    return this.#lanes.pending(account);
  }

  /** Every account's time back to the service's (a reset), or one account's. Its timers stay, due as they were on its time. */
  clearLeads(account?: number): void {
    this.#lanes.clearLeads(account);
    this.#arm();
  }

  /** Stops arming real timers (the service is closing); pending timers never fire. */
  stop(): void {
    this.#stopped = true;
    if (this.#armed) this.#real.clearTimeout(this.#armed.handle);
    this.#armed = null;
    this.#lanes.clear();
  }

  #baseNow(): number {
    return this.frozen ? this.#offset : this.#real.now() + this.#offset;
  }

  async #advanceNow(ms: number): Promise<void> {
    const target = this.#baseNow() + ms;
    for (let next = this.#lanes.earliest(); next && next.due <= target; next = this.#lanes.earliest()) {
      this.#moveTo(next.due);
      this.#fire(pop(next.lane.heap)!);
      await this.#settled(null);
    }
    this.#moveTo(target);
    this.#arm();
    for (const listener of this.#advanced) listener();
  }

  /** One account's time moves: its timers and its sources' due things fire in order, each at its own instant. */
  async #advanceLane(account: number, ms: number): Promise<void> {
    this.#lanes.moving.add(account);
    try {
      await this.#moveLane(account, ms);
    } finally {
      this.#lanes.moving.delete(account);
    }
  }

  async #moveLane(account: number, ms: number): Promise<void> {
    const lane = this.#lanes.of(account);
    const target = lane.lead + ms;
    // A source that still reports what it was just told to fire made no progress (its work failed, or
    // waits for a slot): it is not asked again in this advance, so the advance always ends.
    const stuck = new Set<LaneSource>();
    let fired: { source: LaneSource; at: number } | null = null;
    for (;;) {
      const timer = peek(lane.heap);
      let at = timer?.at;
      let source: LaneSource | undefined;
      for (const candidate of this.#sources) {
        if (stuck.has(candidate)) continue;
        const due = candidate.next(account);
        if (due !== undefined && fired?.source === candidate && due <= fired.at) {
          stuck.add(candidate);
          continue;
        }
        if (due !== undefined && (at === undefined || due < at)) [at, source] = [due, candidate];
      }
      if (at === undefined || at > this.#baseNow() + target) break;
      lane.lead = Math.max(lane.lead, at - this.#baseNow());
      if (source) {
        const firing = source;
        fired = { source: firing, at };
        this.#scope.runInAsyncScope(() => this.as(account, () => firing.fire(account)));
      } else {
        fired = null;
        this.#fire(pop(lane.heap)!);
      }
      await this.#settled(account);
    }
    lane.lead = Math.max(lane.lead, target);
    this.#arm();
    for (const listener of this.#advanced) listener();
  }

  async #settled(account: number | null): Promise<void> {
    await this.#settle();
    for (const settle of this.#settlers) await settle(account);
  }

  /** Sets the service's simulated time to `at`, never backwards. */
  #moveTo(at: number): void {
    if (at <= this.#baseNow()) return;
    this.#offset = this.frozen ? at : at - this.#real.now();
  }

  #fire(timer: Timer): void {
    try {
      this.#scope.runInAsyncScope(() => this.as(timer.lane, timer.callback));
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
    const next = this.#lanes.earliest();
    const now = this.#baseNow();
    // Frozen time stands still, but what is due at this instant still runs (a webhook due now goes now).
    const wait = next && (!this.frozen || next.due <= now) ? next : undefined;
    // Keyed by the real time it fires at: an advance brings the same timer nearer, and its real timer must follow.
    const key = wait ? (this.frozen ? 0 : wait.due - this.#offset) : null;
    if (this.#armed && wait && this.#armed.at === key) return;
    if (this.#armed) this.#real.clearTimeout(this.#armed.handle);
    this.#armed = null;
    if (!wait) return;
    const delay = Math.min(Math.max(0, wait.due - now), MAX_TIMER_MS);
    const handle = this.#real.setTimeout(() => {
      this.#armed = null;
      // Real time has reached it: fire what is due, in order, then arm for the rest.
      const reached = this.#baseNow();
      for (let due = this.#lanes.earliest(); due && due.due <= reached; due = this.#lanes.earliest()) this.#fire(pop(due.lane.heap)!);
      this.#arm();
    }, delay);
    this.#armed = { handle, at: key! };
  }
}
