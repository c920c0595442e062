import type { DeliveryRecord } from './types.js';

/**
 * Where an emitter keeps its deliveries. The emitter holds every record in memory while it runs and
 * calls `save()` after each change; `load()` is read once, by `start()`.
 */
export interface Outbox {
  /** Every stored delivery, in the order they were created. */
  load(): Promise<DeliveryRecord[]>;
  /** Stores the record's current state; resolves once it is durable. */
  save(record: DeliveryRecord): Promise<void>;
  /** Forgets deliveries (finished ones past the emitter's retention); resolves once that is durable. */
  delete(ids: readonly string[]): Promise<void>;
  /** Flushes what is not yet durable and frees resources. */
  close(): Promise<void>;
}

/**
 * Keeps deliveries in memory: for tests, and for processes that accept losing pending deliveries on
 * exit. A second emitter started on the same instance resumes what the first left, like a restart.
 * @example createEmitter({ store: new MemoryOutbox() })
 */
export class MemoryOutbox implements Outbox {
  readonly #records = new Map<string, DeliveryRecord>();

  async load(): Promise<DeliveryRecord[]> {
    // Copies, so a second emitter does not share objects with one that was stopped or abandoned.
    return [...this.#records.values()].map((record) => structuredClone(record));
  }

  async save(record: DeliveryRecord): Promise<void> {
    this.#records.set(record.id, record);
  }

  async delete(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.#records.delete(id);
  }

  async close(): Promise<void> {}

  /** How many deliveries it holds. */
  get size(): number {
    return this.#records.size;
  }
}
