// The memory inbox, for tests: the same records, states and limits as a file inbox, and nothing written
// anywhere.
import type { AddOutcome, InboxBackend, InboxRecord, InboxState, InboxStats } from './record.js';
import { InboxRecordSet, type InboxRecordSetOptions } from './record-set.js';

/**
 * What a memory inbox holds, apart from the back end that runs it: what a file is to a file inbox. The
 * receiver keeps one beside each memory delivery store, so a receiver made later on the same store (a
 * restart, in a test) finds the events the last one acknowledged, as the store still finds their marks.
 */
export class MemoryInboxState {
  /** The records by id, in the order they were added. */
  readonly records = new Map<string, InboxRecord>();
  /** Whether a back end has it open: two would run every event twice. */
  inUse = false;
}

export interface MemoryInboxOptions extends Omit<InboxRecordSetOptions, 'records' | 'write'> {
  /** Where the records live. @default a fresh, empty state */
  state?: MemoryInboxState;
  clock: () => number;
}

/**
 * The memory inbox: the records in a `MemoryInboxState`, and the indexes a file inbox keeps (due times,
 * counts, pending bytes) rebuilt from it at `open()`. One back end at a time per state; a record found
 * `running` at `open()` was abandoned by the last one (its handler hung past `closeTimeout`): that run
 * counts, as a file inbox counts a run its process's end interrupted.
 */
export class MemoryInboxBackend implements InboxBackend {
  readonly where = 'memory';
  readonly #state: MemoryInboxState;
  readonly #records: InboxRecordSet;
  readonly #clock: () => number;
  #closed = false;

  constructor({ state = new MemoryInboxState(), clock, ...options }: MemoryInboxOptions) {
    if (state.inUse) throw new TypeError('This memory inbox is already open by another receiver: close that one first, or give each its own MemoryDeliveryStore.');
    state.inUse = true;
    this.#state = state;
    this.#records = new InboxRecordSet({ ...options, records: state.records });
    this.#clock = clock;
  }

  async open(): Promise<void> {
    this.#records.load(this.#clock());
  }

  async add(record: InboxRecord, maxPending: number, maxPendingBytes = Infinity): Promise<AddOutcome> {
    return this.#records.add(record, maxPending, maxPendingBytes);
  }

  async claim(now: number, _leaseUntil: number, owner: string, limit: number): Promise<InboxRecord[]> {
    return this.#records.claim(now, owner, limit);
  }

  async settle(outcome: InboxRecord, owner: string, now: number): Promise<boolean> {
    return !this.#closed && this.#records.settle(outcome, owner, now);
  }

  async get(id: string): Promise<InboxRecord | undefined> {
    return this.#records.get(id);
  }

  async list(state: InboxState | undefined, limit: number): Promise<InboxRecord[]> {
    return this.#records.list(state, limit);
  }

  async replay(id: string, now: number): Promise<InboxRecord> {
    return this.#records.replay(id, now, this.where);
  }

  async purge(state: 'dead' | 'done', before: number): Promise<number> {
    return this.#records.purge(state, before);
  }

  async stats(): Promise<InboxStats> {
    return this.#records.stats();
  }

  async nextDue(): Promise<number | null> {
    return this.#records.nextDue();
  }

  /** Lets another back end open the state; what runs here now is abandoned and runs again there. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#state.inUse = false;
  }
}
