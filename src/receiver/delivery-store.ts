/** The answer to a claim on a delivery's keys. */
export type ClaimOutcome = 'claimed' | 'processed' | 'in_progress';

/**
 * Where a receiver remembers deliveries, so each runs its handlers once. Implementations must make
 * `claim` atomic across all the keys it is given: of many concurrent claims on one key, one is `claimed`.
 */
export interface DeliveryStore {
  /**
   * Claims every key for `leaseMs` on behalf of `owner` (a value unique to this request). `processed`
   * when any key was completed within the retention time, `in_progress` when any key is held by an
   * unexpired claim, else `claimed` (and all keys are held by `owner`).
   */
  claim(keys: readonly string[], leaseMs: number, owner: string): Promise<ClaimOutcome>;
  /** Marks the keys processed; resolves only once that mark is durable. */
  complete(keys: readonly string[]): Promise<void>;
  /**
   * Drops `owner`'s claim, so the sender's retry runs the handlers again. A claim another request took
   * over after this one's lease expired is left alone.
   */
  release(keys: readonly string[], owner: string): Promise<void>;
  /** Flushes and frees resources. */
  close(): Promise<void>;
}

export interface DeliveryStoreOptions {
  /**
   * How long a processed delivery is remembered, in milliseconds. Keep it longer than the sender's
   * retry schedule (about 2 h 42 min).
   * @default 86_400_000 (24 h)
   */
  retentionMs?: number;
  /** Milliseconds since the epoch; injected by tests. @default Date.now */
  clock?: () => number;
}

export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

type Entry = { processing: true; until: number; owner: string } | { processing: false; at: number };

/**
 * The in-memory bookkeeping shared by the memory and file stores. A Map keeps insertion order and
 * `complete` re-inserts, so processed entries are ordered by completion time and pruning reads from the front.
 */
export class DeliveryLedger {
  readonly entries = new Map<string, Entry>();
  readonly retentionMs: number;
  readonly clock: () => number;

  constructor({ retentionMs = DEFAULT_RETENTION_MS, clock = Date.now }: DeliveryStoreOptions = {}) {
    if (!(Number.isFinite(retentionMs) && retentionMs > 0)) {
      throw new TypeError(`Expected \`retentionMs\` to be a positive number, got ${retentionMs}.`);
    }
    this.retentionMs = retentionMs;
    this.clock = clock;
  }

  claim(keys: readonly string[], leaseMs: number, owner = ''): ClaimOutcome {
    const now = this.clock();
    this.prune(now);
    let busy = false;
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (!entry) continue;
      if (!entry.processing) return 'processed';
      if (entry.until > now) busy = true;
    }
    if (busy) return 'in_progress';
    for (const key of keys) {
      this.entries.delete(key);
      this.entries.set(key, { processing: true, until: now + leaseMs, owner });
    }
    return 'claimed';
  }

  complete(keys: readonly string[], at = this.clock()): void {
    for (const key of keys) {
      this.entries.delete(key);
      this.entries.set(key, { processing: false, at });
    }
  }

  /** Drops the claims `owner` holds; without an owner, any claim. */
  release(keys: readonly string[], owner?: string): void {
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (entry?.processing && (owner === undefined || entry.owner === owner)) this.entries.delete(key);
    }
  }

  /** Forgets processed entries older than the retention time and expired claims at the front. */
  prune(now = this.clock()): void {
    const cutoff = now - this.retentionMs;
    for (const [key, entry] of this.entries) {
      if (entry.processing) {
        if (entry.until <= now) this.entries.delete(key);
        continue;
      }
      if (entry.at > cutoff) break;
      this.entries.delete(key);
    }
  }

  /** Processed keys with their completion time, oldest first. */
  *processed(): Generator<[string, number]> {
    for (const [key, entry] of this.entries) if (!entry.processing) yield [key, entry.at];
  }
}

/**
 * Keeps deliveries in memory: for tests and single-process apps that accept forgetting on restart.
 * @example createReceiver({ secret, store: new MemoryDeliveryStore() })
 */
export class MemoryDeliveryStore implements DeliveryStore {
  readonly #ledger: DeliveryLedger;

  constructor(options: DeliveryStoreOptions = {}) {
    this.#ledger = new DeliveryLedger(options);
  }

  async claim(keys: readonly string[], leaseMs: number, owner: string): Promise<ClaimOutcome> {
    return this.#ledger.claim(keys, leaseMs, owner);
  }

  async complete(keys: readonly string[]): Promise<void> {
    this.#ledger.complete(keys);
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    this.#ledger.release(keys, owner);
  }

  async close(): Promise<void> {}
}
