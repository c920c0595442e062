import type { DeliveryRecord } from './types.js';

/**
 * Deliveries in a binary min-heap by `nextAttemptAt`, ties to the older delivery. Records carry no heap
 * index (it would cost ~35 B each); the rare move or removal of a queued record finds it by a linear scan.
 */
export class RecordHeap<Queued extends DeliveryRecord = DeliveryRecord> {
  readonly #heap: Queued[] = [];

  get size(): number {
    return this.#heap.length;
  }

  /** The earliest delivery, left in place. */
  peek(): Queued | undefined {
    return this.#heap[0];
  }

  /** Adds a delivery, or moves it when it is already queued (its `nextAttemptAt` changed). */
  push(record: Queued): void {
    const slot = this.#heap.indexOf(record);
    if (slot >= 0) {
      this.#down(this.#up(slot));
      return;
    }
    this.add(record);
  }

  /** Adds a delivery known not to be queued: no scan. */
  add(record: Queued): void {
    this.#heap.push(record);
    this.#up(this.#heap.length - 1);
  }

  /** Takes the earliest delivery. */
  pop(): Queued | undefined {
    const top = this.#heap[0];
    if (top !== undefined) this.#removeAt(0);
    return top;
  }

  /** Removes a delivery if it is queued; whether it was. */
  remove(record: Queued): boolean {
    const slot = this.#heap.indexOf(record);
    if (slot >= 0) this.#removeAt(slot);
    return slot >= 0;
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
