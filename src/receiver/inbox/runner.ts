// The worker. Takes due records from the back end, `concurrency` at a time, runs the
// handlers, and writes each outcome: done, pending again after the backoff, or dead. No Node module.
import { HandlerTimeoutError } from '../../protocol/errors.js';
import { describeFailure } from '../../protocol/errors.js';
import type { WebhookEvent } from '../../protocol/events.js';
import { HandlerContext, RunDeadline } from '../deadline.js';
import { isThenable } from '../handlers.js';
import { inboxDelay, type BackoffOptions } from './backoff.js';
import type { InboxTimers } from './options.js';
import type { InboxBackend, InboxRecord, InboxSource } from './record.js';

/** What the runner hands the handlers: the receiver's `WebhookContext`. */
export interface RunContext {
  deliveryId: string;
  rawBody: Uint8Array;
  receivedAt: Date;
  attempt: number;
  source: InboxSource;
  /** Aborted at the run's deadline (`handlerTimeout`) or when `close()` gives up on it (`closeTimeout`). */
  signal: AbortSignal;
}

export interface RunnerOptions {
  backend: InboxBackend;
  concurrency: number;
  backoff: BackoffOptions;
  /** A claim holds this long; a worker that dies holding one loses it then. */
  leaseMs: number;
  clock: () => number;
  timers: InboxTimers;
  /** Redis: look for others' events this often; `null` for a file, which only this process fills. */
  pollMs: number | null;
  closeTimeout: number;
  /** A run still going after this many milliseconds is abandoned and counts as failed. */
  handlerTimeout: number;
  /** Runs the handlers (the receiver's dispatch); throws or rejects when one failed. */
  dispatch: (event: WebhookEvent, context: RunContext) => unknown;
  /** Whether any handler is registered: recovered events wait for the app's `on()` calls. */
  ready: () => boolean;
  /** A handler failure (with its context) or a back end failure (without). */
  onError: (error: unknown, context?: RunContext) => void;
}

const encoder = new TextEncoder();

interface IdleWaiter {
  handlers: boolean;
  resolve: () => void;
}

export class InboxRunner {
  readonly #o: RunnerOptions;
  /** Identifies this process's claims in a shared (Redis) inbox. */
  readonly #owner = `${crypto.randomUUID()}`;
  readonly #runs = new Set<Promise<void>>();
  /** The deadline of each run still waiting for its handlers: `close()` stops them at its timeout. */
  readonly #deadlines = new Set<RunDeadline>();
  /** Outcomes handed to the back end whose writes have not finished. */
  readonly #settling = new Set<Promise<void>>();
  /** Lease renewals sent to the back end whose answer has not come back. */
  #extending = 0;
  /** Callers of `idle()` waiting for the runner to have nothing in flight. */
  #idleWaiters: IdleWaiter[] = [];
  #timer: unknown = null;
  /** The look for due records under way: close() lets it start what it claimed before counting runs. */
  #pumped: Promise<void> = Promise.resolve();
  #pumping = false;
  #again = false;
  #closing = false;

  constructor(options: RunnerOptions) {
    this.#o = options;
  }

  /** Handlers running now, here. */
  get active(): number {
    return this.#runs.size;
  }

  /**
   * Resolves once nothing is in flight: no look for due records, no outcome being written, no lease
   * renewal waiting for its answer and (with `handlers`) no handler running. Records waiting for their
   * next try, or for a handler to be registered, do not count.
   */
  idle(handlers = true): Promise<void> {
    if (this.#isIdle(handlers)) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push({ handlers, resolve }));
  }

  /** Looks for due records soon (coalesced: many kicks in one turn make one pump). */
  kick(): void {
    if (this.#closing) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumped = this.#pump();
  }

  /**
   * Takes no more records and waits up to `closeTimeout` for the running ones, then aborts their signals and
   * abandons them without an outcome: they run again at the next start (file) or once their lease ends
   * (Redis). The rest stay for the next start.
   */
  async close(): Promise<void> {
    this.#closing = true;
    this.#clearTimer();
    await this.#pumped;
    if (this.#runs.size > 0) {
      const { timers, closeTimeout } = this.#o;
      // The app is awaiting close(), and every inbox timer is unref'd: a host timer holds the process open
      // until close() returns, else a handler that holds nothing open lets it exit mid-await.
      const hold = globalThis.setInterval(() => undefined, 1 << 30);
      let timer: unknown;
      try {
        const timeout = new Promise<false>((resolve) => (timer = timers.setTimeout(() => resolve(false), closeTimeout)));
        const finished = await Promise.race([Promise.allSettled([...this.#runs]).then(() => true), timeout]);
        if (!finished) {
          const reason = new HandlerTimeoutError('closeTimeout', closeTimeout);
          for (const deadline of this.#deadlines) deadline.stop(reason);
          await Promise.allSettled([...this.#runs]);
        }
      } finally {
        timers.clearTimeout(timer);
        globalThis.clearInterval(hold);
      }
    }
    await Promise.allSettled([...this.#settling]);
  }

  async #pump(): Promise<void> {
    const { backend, concurrency, leaseMs, clock } = this.#o;
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        while (!this.#closing && this.#runs.size < concurrency && this.#o.ready()) {
          const now = clock();
          const records = await backend.claim(now, now + leaseMs, this.#owner, concurrency - this.#runs.size);
          if (records.length === 0) break;
          for (const record of records) this.#start(record);
        }
      } while (this.#again && !this.#closing);
      await this.#arm();
    } catch (error) {
      // The back end failed (Redis away): say so, and look again after a while.
      this.#o.onError(error);
      this.#wake(this.#o.pollMs ?? 1000);
    } finally {
      this.#pumping = false;
    }
    if (this.#again) this.kick();
    this.#tellIdle();
  }

  #start(record: InboxRecord): void {
    const run = this.#run(record).finally(() => {
      this.#runs.delete(run);
      this.kick();
      this.#tellIdle();
    });
    this.#runs.add(run);
  }

  async #run(record: InboxRecord): Promise<void> {
    const { dispatch, clock, backoff, backend, timers, handlerTimeout } = this.#o;
    const deadline = new RunDeadline();
    const context: RunContext = new HandlerContext({ deliveryId: record.deliveryId, rawBody: encoder.encode(record.body), receivedAt: new Date(record.receivedAt), attempt: record.attempts, source: record.source }, deadline);
    const keeping = this.#keepLease(record.id);
    this.#deadlines.add(deadline);
    try {
      const ran = dispatch(JSON.parse(record.body) as WebhookEvent, context);
      if (isThenable(ran)) {
        // Past the deadline the run fails and frees its slot, though its promise may never settle.
        await deadline.race(ran, handlerTimeout, timers, () => new HandlerTimeoutError('handlerTimeout', handlerTimeout));
      }
      Object.assign(record, { state: 'done', nextAttemptAt: null, finishedAt: clock(), lastError: null });
    } catch (error) {
      if (error instanceof HandlerTimeoutError && error.limit === 'closeTimeout') {
        // Abandoned by close(): no outcome, so the run counts as one that a crash ended.
        this.#deadlines.delete(deadline);
        keeping.stop();
        return;
      }
      this.#o.onError(error, context);
      const now = clock();
      const delay = inboxDelay(record.attempts, backoff);
      const lastError = describeFailure(error);
      // Past `retries` the event is dead: kept, visible, replayable, never dropped.
      if (delay === null) Object.assign(record, { state: 'dead', nextAttemptAt: null, finishedAt: now, lastError });
      else Object.assign(record, { state: 'pending', nextAttemptAt: now + delay, finishedAt: null, lastError });
    }
    this.#deadlines.delete(deadline);
    keeping.stop();
    // The slot is free once the outcome is handed to the back end (the file's is in
    // memory at once); waiting for its write too would hold a slot per group commit, and the handlers
    // would fall behind the requests under load.
    const settling: Promise<void> = backend.settle(record, this.#owner, clock()).then(
      () => this.#settled(settling),
      (error: unknown) => {
        this.#o.onError(error);
        this.#settled(settling);
      },
    );
    this.#settling.add(settling);
  }

  /**
   * On a shared back end, renews the claim every half lease while the handler runs, so a handler slower
   * than `leaseMs` is not taken over by another process; only a process that died stops renewing.
   */
  #keepLease(id: string): { stop(): void } {
    const { backend, timers, leaseMs, clock } = this.#o;
    if (!backend.extend) return { stop: () => undefined };
    let handle: unknown = null;
    let stopped = false;
    const renew = () => {
      if (stopped) return;
      handle = timers.setTimeout(() => {
        if (stopped) return;
        // Counted, so that idle() waits for its answer: a simulated clock must not pass the lease before it.
        this.#extending++;
        const answered = () => {
          this.#extending--;
          this.#tellIdle();
        };
        backend.extend!(id, this.#owner, clock() + leaseMs).then(
          (kept) => {
            if (kept) renew();
            answered();
          },
          (error: unknown) => {
            this.#o.onError(error);
            renew();
            answered();
          },
        );
      }, leaseMs / 2);
    };
    renew();
    return {
      stop: () => {
        stopped = true;
        if (handle !== null) timers.clearTimeout(handle);
      },
    };
  }

  #settled(settling: Promise<void>): void {
    this.#settling.delete(settling);
    this.#tellIdle();
  }

  #isIdle(handlers: boolean): boolean {
    return !this.#pumping && this.#settling.size === 0 && this.#extending === 0 && (!handlers || this.#runs.size === 0);
  }

  /** Resolves the `idle()` callers whose condition now holds. */
  #tellIdle(): void {
    if (this.#idleWaiters.length === 0) return;
    const waiting: IdleWaiter[] = [];
    for (const waiter of this.#idleWaiters) {
      if (this.#isIdle(waiter.handlers)) waiter.resolve();
      else waiting.push(waiter);
    }
    this.#idleWaiters = waiting;
  }

  /** Sets the timer for the next due record (and, on Redis, the next look for others' records). */
  async #arm(): Promise<void> {
    this.#clearTimer();
    // Full: a run that ends kicks again. No handler yet: on() kicks.
    if (this.#closing || this.#runs.size >= this.#o.concurrency || !this.#o.ready()) return;
    const due = await this.#o.backend.nextDue();
    const { pollMs } = this.#o;
    let wait = due === null ? null : Math.max(0, due - this.#o.clock());
    if (pollMs !== null) wait = Math.max(5, Math.min(wait ?? pollMs, pollMs));
    if (wait !== null) this.#wake(wait);
  }

  #wake(ms: number): void {
    this.#clearTimer();
    if (this.#closing) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#timer = null;
      this.kick();
    }, ms);
  }

  #clearTimer(): void {
    if (this.#timer !== null) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = null;
  }
}

