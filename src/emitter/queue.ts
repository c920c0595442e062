import type { DeliveryRecord, EmitterClock } from './types.js';

// The heap slot of a queued record. A symbol keeps it out of JSON and structured clones of the record.
const SLOT = Symbol('queueSlot');
type Queued = DeliveryRecord & { [SLOT]?: number };

// Node's timers overflow above 2^31-1 ms (about 24.8 days) and fire at once; longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The pending deliveries, ordered by `nextAttemptAt` in a binary min-heap, with one timer armed for the
 * earliest: 100,000 scheduled retries cost one timer and one array slot each, not a sleeping promise each.
 * Ties go to the older delivery.
 */
export class DeliveryQueue {
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

  /** Adds a pending delivery, or moves it when it is already queued. */
  push(record: DeliveryRecord): void {
    const queued = record as Queued;
    const slot = queued[SLOT];
    if (slot !== undefined && this.#heap[slot] === queued) {
      this.#up(slot);
      this.#down(queued[SLOT]!);
      return;
    }
    queued[SLOT] = this.#heap.length;
    this.#heap.push(queued);
    this.#up(this.#heap.length - 1);
  }

  /** Takes the earliest delivery if it is due at `now`. */
  popDue(now: number): DeliveryRecord | undefined {
    const top = this.#heap[0];
    if (top === undefined || (top.nextAttemptAt ?? 0) > now) return undefined;
    this.#removeAt(0);
    return top;
  }

  /** Removes a delivery if it is queued. */
  remove(record: DeliveryRecord): void {
    const slot = (record as Queued)[SLOT];
    if (slot !== undefined && this.#heap[slot] === record) this.#removeAt(slot);
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
    const removed = heap[slot]!;
    const last = heap.pop()!;
    removed[SLOT] = undefined; // not `delete`: that would turn the record into a slow dictionary object
    if (slot < heap.length) {
      heap[slot] = last;
      last[SLOT] = slot;
      this.#up(slot);
      this.#down(last[SLOT]!);
    }
  }

  #less(a: Queued, b: Queued): boolean {
    const ta = a.nextAttemptAt ?? 0;
    const tb = b.nextAttemptAt ?? 0;
    return ta < tb || (ta === tb && a.createdAt < b.createdAt);
  }

  #up(slot: number): void {
    const heap = this.#heap;
    const item = heap[slot]!;
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1;
      const parent = heap[parentSlot]!;
      if (!this.#less(item, parent)) break;
      heap[slot] = parent;
      parent[SLOT] = slot;
      slot = parentSlot;
    }
    heap[slot] = item;
    item[SLOT] = slot;
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
      heap[slot]![SLOT] = slot;
      slot = child;
    }
    heap[slot] = item;
    item[SLOT] = slot;
  }
}
