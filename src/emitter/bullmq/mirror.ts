import { newestFirst, type ListOptions } from '../records.js';
import { toDelivery } from '../view.js';
import type { Delivery } from '../types.js';
import type { StoredRecord } from './record-store.js';

/** Told of every change the mirror takes: the record before and after (`undefined`: absent). */
export type MirrorListener = (before: StoredRecord | undefined, after: StoredRecord | undefined) => void;

/**
 * This process's copy of a queue's delivery records, so `get()` and `list()` answer synchronously. It is
 * loaded at start, kept current by the changes every process publishes, and loaded again after a lost
 * connection. A change older than what it holds (by version) is ignored, so the order in which a local
 * write and its published echo arrive does not matter. Secrets are never kept here.
 */
export class RecordMirror {
  /** By id, in creation order (`seq`) unless `#unordered`. */
  #records = new Map<string, StoredRecord>();
  #unordered = false;
  #lastSeq = 0;
  #pending = 0;
  /** Ids changed by a published change while a load is on its way: the load must not undo them. */
  #touched: Set<string> | null = null;
  readonly #onChange: MirrorListener;

  constructor(onChange: MirrorListener) {
    this.#onChange = onChange;
  }

  get size(): number {
    return this.#records.size;
  }

  /** Deliveries waiting for an attempt, in every process. */
  get pending(): number {
    return this.#pending;
  }

  record(id: string): StoredRecord | undefined {
    return this.#records.get(id);
  }

  /** Every record held (secrets blank), oldest first. */
  records(): IterableIterator<StoredRecord> {
    return this.#records.values();
  }

  get(id: string): Delivery | undefined {
    const record = this.#records.get(id);
    return record && toDelivery(record);
  }

  /** Deliveries, newest first. */
  list(options: ListOptions = {}): Delivery[] {
    if (this.#unordered) this.#reorder();
    return newestFirst(this.#records.values(), options);
  }

  /** Takes a record as written, unless what is held is as new or newer. */
  apply(record: StoredRecord): void {
    this.#touched?.add(record.id);
    const before = this.#records.get(record.id);
    if (before && before.v >= record.v) return;
    this.#set(before, record.secret === '' ? record : { ...record, secret: '' });
  }

  /** Forgets deliveries (retention, or a send that was taken back). */
  forget(ids: readonly string[]): void {
    for (const id of ids) {
      this.#touched?.add(id);
      const before = this.#records.get(id);
      if (!before) continue;
      this.#records.delete(id);
      if (before.state === 'pending') this.#pending--;
      this.#onChange(before, undefined);
    }
  }

  /** Call before reading every record from Redis; published changes that arrive meanwhile win over the read. */
  beginLoad(): void {
    this.#touched = new Set();
  }

  /**
   * Takes every record read from Redis: newer ones replace what is held, and what Redis no longer holds
   * (forgotten while this process was away) is dropped, unless a published change brought it meanwhile.
   */
  finishLoad(records: readonly StoredRecord[]): void {
    const touched = this.#touched ?? new Set<string>();
    this.#touched = null;
    const read = new Set<string>();
    for (const record of records) {
      read.add(record.id);
      // One forgotten meanwhile stays forgotten; one changed meanwhile keeps the newer version.
      if (!touched.has(record.id) || this.#records.has(record.id)) this.apply(record);
    }
    const missing = [...this.#records.keys()].filter((id) => !read.has(id) && !touched.has(id));
    this.forget(missing);
    this.#reorder();
  }

  #set(before: StoredRecord | undefined, after: StoredRecord): void {
    if (!before && after.seq < this.#lastSeq) this.#unordered = true;
    this.#lastSeq = Math.max(this.#lastSeq, after.seq);
    this.#records.set(after.id, after);
    this.#pending += (after.state === 'pending' ? 1 : 0) - (before?.state === 'pending' ? 1 : 0);
    this.#onChange(before, after);
  }

  #reorder(): void {
    if (!this.#unordered && this.#isOrdered()) return;
    this.#records = new Map([...this.#records].sort((a, b) => a[1].seq - b[1].seq));
    this.#unordered = false;
  }

  #isOrdered(): boolean {
    let last = 0;
    for (const record of this.#records.values()) {
      if (record.seq < last) return false;
      last = record.seq;
    }
    return true;
  }
}
