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
   * unexpired claim, else `claimed` (and all keys are held by `owner`). A store that answers from memory
   * may return the outcome itself rather than a promise; the receiver awaits only a promise.
   */
  claim(keys: readonly string[], leaseMs: number, owner: string): ClaimOutcome | Promise<ClaimOutcome>;
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

interface Claim {
  until: number;
  owner: string;
}

/**
 * The in-memory bookkeeping shared by the memory and file stores. Processed keys map to their completion
 * time alone (a number, not an object: every retained delivery lives on the heap for the whole retention
 * time, so each byte and each object the collector must trace counts); a Map keeps insertion order and
 * `complete` re-inserts, so they are ordered by completion time and pruning reads from the front. Claims
 * in progress, few and short-lived, are kept apart.
 */
export class DeliveryLedger {
  readonly #processed = new Map<string, number>();
  readonly #claims = new Map<string, Claim>();
  readonly retentionMs: number;
  readonly clock: () => number;
  /** When `claim` next sweeps expired entries out of memory. */
  #nextPrune = -Infinity;

  constructor({ retentionMs = DEFAULT_RETENTION_MS, clock = Date.now }: DeliveryStoreOptions = {}) {
    if (!(Number.isFinite(retentionMs) && retentionMs > 0)) {
      throw new TypeError(`Expected \`retentionMs\` to be a positive number, got ${retentionMs}.`);
    }
    this.retentionMs = retentionMs;
    this.clock = clock;
  }

  claim(keys: readonly string[], leaseMs: number, owner = ''): ClaimOutcome {
    const now = this.clock();
    // Expiry is checked per key below, so the sweep that frees the memory can run once a second.
    if (now >= this.#nextPrune) {
      this.prune(now);
      this.#nextPrune = now + 1000;
    }
    const cutoff = now - this.retentionMs;
    let busy = false;
    for (const key of keys) {
      const at = this.#processed.get(key);
      if (at !== undefined && at > cutoff) return 'processed';
      const claim = this.#claims.get(key);
      if (claim !== undefined && claim.until > now) busy = true;
    }
    if (busy) return 'in_progress';
    const claim = { until: now + leaseMs, owner };
    for (const key of keys) this.#claims.set(key, claim);
    return 'claimed';
  }

  complete(keys: readonly string[], at = this.clock()): void {
    for (const key of keys) {
      this.#claims.delete(key);
      this.#processed.delete(key);
      this.#processed.set(key, at);
    }
  }

  /** Drops the claims `owner` holds; without an owner, any claim. */
  release(keys: readonly string[], owner?: string): void {
    for (const key of keys) {
      const claim = this.#claims.get(key);
      if (claim && (owner === undefined || claim.owner === owner)) this.#claims.delete(key);
    }
  }

  /** Forgets processed entries older than the retention time, and expired claims. */
  prune(now = this.clock()): void {
    const cutoff = now - this.retentionMs;
    for (const [key, at] of this.#processed) {
      if (at > cutoff) break;
      this.#processed.delete(key);
    }
    // Claims are few (one per request in flight, or left by a crash): a sweep now and then is enough.
    if (this.#claims.size > 1024) for (const [key, claim] of this.#claims) if (claim.until <= now) this.#claims.delete(key);
  }

  /** Processed keys with their completion time, oldest first. */
  processed(): IterableIterator<[string, number]> {
    return this.#processed.entries();
  }
}

/** The promise every `complete` of this event-loop turn shares; `null` between turns. */
let turn: Promise<void> | null = null;

/**
 * Resolves once this turn of the event loop has run (one `setImmediate` shared by every caller of the
 * turn), so the memory store sends a turn's replies together as the file store's group commit does:
 * answering each request from inside its socket's read callback, one reply and one wake-up of the sender
 * at a time, costs more server CPU per request than the file store (91 against 78 µs). Where there
 * is no `setImmediate` (Workers) it resolves at once.
 */
function endOfTurn(): Promise<void> {
  if (typeof setImmediate !== 'function') return Promise.resolve();
  return (turn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      turn = null;
      resolve();
    }),
  ));
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

  claim(keys: readonly string[], leaseMs: number, owner: string): ClaimOutcome {
    return this.#ledger.claim(keys, leaseMs, owner);
  }

  complete(keys: readonly string[]): Promise<void> {
    this.#ledger.complete(keys);
    return endOfTurn();
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    this.#ledger.release(keys, owner);
  }

  async close(): Promise<void> {}
}
