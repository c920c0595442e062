import { RecordHeap } from './record-heap.js';
import type { DeliveryRecord, EmitterClock } from './types.js';

// Node's timers overflow above 2^31-1 ms (about 24.8 days) and fire at once; longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Arms one timer at a time on `clock` for the time `at` (null: none), calling `onDue` when it fires. The
 * queues keep their earliest time here: 100,000 scheduled retries cost one timer, not a sleeping promise each.
 */
export class DueTimer {
  readonly #clock: EmitterClock;
  readonly #onDue: () => void;
  #timer: unknown = null;
  #timerAt: number | null = null;

  constructor(clock: EmitterClock, onDue: () => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** Arms the timer for `at`, or clears it for `null`; a timer already armed for `at` is kept. */
  armAt(at: number | null): void {
    if (at === this.#timerAt) return;
    this.disarm();
    if (at === null) return;
    const delay = Math.min(Math.max(0, at - this.#clock.now()), MAX_TIMER_MS);
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = null;
      this.#timerAt = null;
      this.#onDue();
    }, delay);
  }

  disarm(): void {
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = null;
  }
}

/**
 * The pending deliveries, ordered by `nextAttemptAt` (ties to the older delivery), with one timer armed
 * for the earliest.
 */
export class DeliveryQueue<Queued extends DeliveryRecord = DeliveryRecord> {
  readonly #heap = new RecordHeap<Queued>();
  readonly #timer: DueTimer;

  /** `onDue` runs when the earliest delivery's time has come; it pops what it can take. */
  constructor(clock: EmitterClock, onDue: () => void) {
    this.#timer = new DueTimer(clock, onDue);
  }

  get size(): number {
    return this.#heap.size;
  }

  /** Adds a pending delivery, or moves it when it is already queued (its `nextAttemptAt` changed). */
  push(record: Queued): void {
    this.#heap.push(record);
  }

  /** Adds a delivery known not to be queued: no scan. */
  add(record: Queued): void {
    this.#heap.add(record);
  }

  /** Takes the earliest delivery if it is due at `now`. */
  popDue(now: number): Queued | undefined {
    const top = this.#heap.peek();
    if (top === undefined || (top.nextAttemptAt ?? 0) > now) return undefined;
    return this.#heap.pop();
  }

  /** Removes a delivery if it is queued. */
  remove(record: Queued): void {
    this.#heap.remove(record);
  }

  /** Arms the one timer for the earliest delivery, or clears it when there is nothing to wait for. */
  arm(): void {
    const top = this.#heap.peek();
    this.#timer.armAt(top ? (top.nextAttemptAt ?? 0) : null);
  }

  disarm(): void {
    this.#timer.disarm();
  }
}
