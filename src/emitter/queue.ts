import type { DeliveryRecord, EmitterClock } from './types.js';

// Node's timers overflow above 2^31-1 ms (about 24.8 days) and fire at once; longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The pending deliveries, ordered by `nextAttemptAt` in a binary min-heap, with one timer armed for the
 * earliest: 100,000 scheduled retries cost one timer and one array slot each, not a sleeping promise each.
 * Ties go to the older delivery. Records carry no heap index (it would cost ~35 B each); the rare move or
 * removal of a queued record finds it by a linear scan instead.
 */
export class DeliveryQueue<Queued extends DeliveryRecord = DeliveryRecord> {
  readonly #heap: Queued[] = [];
  readonly #clock: EmitterClock;
  readonly #onDue: () => void;
  #timer: unknown = null;
  #timerAt: number | null = null;

  /** `onDue` runs when the earliest delivery's time has come; it pops what it can take. */
  constructor(clock: EmitterClock, onDue: () => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  get size(): number {
    return this.#heap.length;
  }

  /** Adds a pending delivery, or moves it when it is already queued (its `nextAttemptAt` changed). */
  push(record: Queued): void {
    const slot = this.#heap.indexOf(record);
    if (slot >= 0) {
      this.#down(this.#up(slot));
      return;
    }
    this.#heap.push(record);
    this.#up(this.#heap.length - 1);
  }

  /** Adds a delivery known not to be queued: no scan. */
  add(record: Queued): void {
    this.#heap.push(record);
    this.#up(this.#heap.length - 1);
  }

  /** Takes the earliest delivery if it is due at `now`. */
  popDue(now: number): Queued | undefined {
    const top = this.#heap[0];
    if (top === undefined || (top.nextAttemptAt ?? 0) > now) return undefined;
    this.#removeAt(0);
    return top;
  }

  /** Removes a delivery if it is queued. */
  remove(record: Queued): void {
    const slot = this.#heap.indexOf(record);
    if (slot >= 0) this.#removeAt(slot);
  }

  /** Arms the one timer for the earliest delivery, or clears it when there is nothing to wait for. */
  arm(): void {
    const top = this.#heap[0];
    const at = top ? (top.nextAttemptAt ?? 0) : null;
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

  #removeAt(slot: number): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (slot < heap.length) {
      heap[slot] = last;
      this.#down(this.#up(slot));
    }
  }

  #less(a: Queued, b: Queued): boolean {
    const ta = a.nextAttemptAt ?? 0;
    const tb = b.nextAttemptAt ?? 0;
    return ta < tb || (ta === tb && a.createdAt < b.createdAt);
  }

  /** Moves the item at `slot` towards the root; returns where it ended. */
  #up(slot: number): number {
    const heap = this.#heap;
    const item = heap[slot]!;
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1;
      const parent = heap[parentSlot]!;
      if (!this.#less(item, parent)) break;
      heap[slot] = parent;
      slot = parentSlot;
    }
    heap[slot] = item;
    return slot;
  }

  #down(slot: number): void {
    const heap = this.#heap;
    const item = heap[slot]!;
    const half = heap.length >> 1;
    while (slot < half) {
      let child = 2 * slot + 1;
      const right = child + 1;
      if (right < heap.length && this.#less(heap[right]!, heap[child]!)) child = right;
      if (!this.#less(heap[child]!, item)) break;
      heap[slot] = heap[child]!;
      slot = child;
    }
    heap[slot] = item;
  }
}
