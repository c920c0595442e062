import { lastActivity, toDelivery } from './view.js';
import type { Delivery, DeliveryRecord, DeliveryState } from './types.js';

/** What `list()` takes. */
export interface ListOptions {
  /** Only deliveries in this state. */
  state?: DeliveryState;
  /** At most this many, newest first. @default 50 */
  limit?: number;
}

/**
 * The emitter's deliveries in memory: every record by id, in the order they were added, and the finished
 * ones in the order they finished, so retention forgets the oldest first. It holds no per-record state of
 * its own; the emitter decides when a record is added, finished or forgotten, and writes the outbox.
 */
export class DeliveryBook {
  readonly #records = new Map<string, DeliveryRecord>();
  /** Finished delivery ids, oldest first, for retention. */
  readonly #finished = new Set<string>();
  readonly #retainFinished: number;

  constructor(retainFinished: number) {
    this.#retainFinished = retainFinished;
  }

  /** How many deliveries are held, finished ones included. */
  get size(): number {
    return this.#records.size;
  }

  has(id: string): boolean {
    return this.#records.has(id);
  }

  /** The live record with this id (not a copy), or `undefined`. */
  record(id: string): DeliveryRecord | undefined {
    return this.#records.get(id);
  }

  add(record: DeliveryRecord): void {
    this.#records.set(record.id, record);
  }

  /** Drops a record outright, as if it was never added. */
  remove(id: string): void {
    this.#records.delete(id);
    this.#finished.delete(id);
  }

  /** The public view of the delivery with this id, or `undefined`. */
  get(id: string): Delivery | undefined {
    const record = this.#records.get(id);
    return record && toDelivery(record);
  }

  /** Deliveries, newest first. */
  list(options: ListOptions = {}): Delivery[] {
    return newestFirst(this.#records.values(), options);
  }

  /** Counts the delivery as the newest finished one, for retention. */
  markFinished(id: string): void {
    this.#finished.add(id);
  }

  /** Takes the delivery out of retention, as when it is redelivered: it cannot be forgotten meanwhile. */
  markUnfinished(id: string): void {
    this.#finished.delete(id);
  }

  /**
   * Adds the records loaded from the outbox, in their stored order, and counts every one not `pending` as
   * finished, oldest last activity first. Called once the emitter has made the in-flight ones pending again.
   */
  restore(records: readonly DeliveryRecord[]): void {
    const finished: DeliveryRecord[] = [];
    for (const record of records) {
      this.#records.set(record.id, record);
      if (record.state !== 'pending') finished.push(record);
    }
    finished.sort((a, b) => lastActivity(a) - lastActivity(b));
    for (const record of finished) this.#finished.add(record.id);
  }

  /** Forgets the oldest finished deliveries beyond `retainFinished` and returns their ids, oldest first. */
  forgetPastRetention(): string[] {
    const excess = this.#finished.size - this.#retainFinished;
    if (excess <= 0) return [];
    const forgotten: string[] = [];
    for (const id of this.#finished) {
      if (forgotten.length >= excess) break;
      forgotten.push(id);
    }
    for (const id of forgotten) {
      this.#finished.delete(id);
      this.#records.delete(id);
    }
    return forgotten;
  }
}

/**
 * `list()` of both backends: records in the order they were created, newest first, filtered by state.
 * Checks `limit`, which callers pass through from users.
 */
export function newestFirst(ordered: Iterable<DeliveryRecord>, { state, limit = 50 }: ListOptions = {}): Delivery[] {
  if (!(Number.isSafeInteger(limit) && limit >= 0)) throw new TypeError(`Expected \`limit\` to be a non-negative integer, got ${limit}.`);
  const found: Delivery[] = [];
  const records = [...ordered];
  for (let i = records.length - 1; i >= 0 && found.length < limit; i--) {
    const record = records[i]!;
    if (state === undefined || record.state === state) found.push(toDelivery(record));
  }
  return found;
}
