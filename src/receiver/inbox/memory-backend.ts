// The memory inbox, for tests: the same records, states and limits as a file inbox, and nothing written
// anywhere. No Node module.
import { InboxError } from '../../protocol/errors.js';
import { DueHeap } from './due-heap.js';
import type { AddOutcome, InboxBackend, InboxRecord, InboxState, InboxStats } from './record.js';

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

export interface MemoryInboxOptions {
  /** Where the records live. @default a fresh, empty state */
  state?: MemoryInboxState;
  /** Done records kept at most. */
  keepDone: number;
  /** Done records kept at most this long, in milliseconds. */
  keepDoneMs: number;
  clock: () => number;
}

const encoder = new TextEncoder();

/**
 * The memory inbox: the records in a `MemoryInboxState`, and the indexes a file inbox keeps (due times,
 * counts, pending bytes) rebuilt from it at `open()`. One back end at a time per state; a record found
 * `running` at `open()` was abandoned by the last one (its handler hung past `closeTimeout`): it runs again,
 * its attempt counted.
 */
export class MemoryInboxBackend implements InboxBackend {
  readonly where = 'memory';
  readonly #state: MemoryInboxState;
  readonly #records: Map<string, InboxRecord>;
  readonly #due = new DueHeap();
  /** Done ids in the order they finished, oldest first: what the retention drops. */
  readonly #done = new Set<string>();
  readonly #owners = new Map<string, string>();
  readonly #counts: InboxStats = { pending: 0, running: 0, dead: 0, done: 0 };
  /** UTF-8 bytes of the pending and running bodies: what `maxPendingBytes` bounds. */
  #activeBytes = 0;
  readonly #keepDone: number;
  readonly #keepDoneMs: number;
  readonly #clock: () => number;
  #closed = false;

  constructor({ state = new MemoryInboxState(), keepDone, keepDoneMs, clock }: MemoryInboxOptions) {
    if (state.inUse) throw new TypeError('This memory inbox is already open by another receiver: close that one first, or give each its own MemoryDeliveryStore.');
    state.inUse = true;
    this.#state = state;
    this.#records = state.records;
    this.#keepDone = keepDone;
    this.#keepDoneMs = keepDoneMs;
    this.#clock = clock;
  }

  async open(): Promise<void> {
    const now = this.#clock();
    const done: InboxRecord[] = [];
    for (const record of this.#records.values()) {
      if (record.state === 'running') Object.assign(record, { state: 'pending', nextAttemptAt: now });
      this.#counts[record.state]++;
      if (record.state === 'pending') {
        this.#activeBytes += bodyBytes(record);
        this.#due.push(record.nextAttemptAt ?? now, record.id);
      }
      if (record.state === 'done') done.push(record);
    }
    done.sort((a, b) => (a.finishedAt ?? 0) - (b.finishedAt ?? 0));
    for (const record of done) this.#done.add(record.id);
    this.#trim(now);
  }

  async add(record: InboxRecord, maxPending: number, maxPendingBytes = Infinity): Promise<AddOutcome> {
    if (this.#records.has(record.id)) return 'exists';
    if (this.#counts.pending + this.#counts.running >= maxPending) return 'full';
    const bytes = bodyBytes(record);
    if (this.#activeBytes + bytes > maxPendingBytes) return 'full';
    this.#records.set(record.id, copy(record));
    this.#counts[record.state]++;
    this.#activeBytes += bytes;
    this.#due.push(record.nextAttemptAt ?? record.receivedAt, record.id);
    return 'added';
  }

  async claim(now: number, _leaseUntil: number, owner: string, limit: number): Promise<InboxRecord[]> {
    const out: InboxRecord[] = [];
    while (out.length < limit && this.#due.size > 0 && this.#due.peekAt()! <= now) {
      const at = this.#due.peekAt();
      const record = this.#records.get(this.#due.peekId()!);
      this.#due.pop();
      // A stale entry: the record was replayed, purged or rescheduled since it was pushed.
      if (!record || record.state !== 'pending' || record.nextAttemptAt !== at) continue;
      this.#move(record, 'running');
      this.#owners.set(record.id, owner);
      record.attempts++;
      record.nextAttemptAt = null;
      out.push(copy(record));
    }
    return out;
  }

  async settle(outcome: InboxRecord, owner: string, now: number): Promise<boolean> {
    const record = this.#records.get(outcome.id);
    if (this.#closed || !record || record.state !== 'running' || this.#owners.get(record.id) !== owner) return false;
    this.#owners.delete(record.id);
    const { state, nextAttemptAt, finishedAt, lastError } = outcome;
    this.#move(record, state);
    Object.assign(record, { nextAttemptAt, finishedAt, lastError });
    if (state === 'pending') this.#due.push(nextAttemptAt ?? now, record.id);
    if (state === 'done') {
      this.#done.add(record.id);
      this.#trim(now);
    }
    return true;
  }

  async get(id: string): Promise<InboxRecord | undefined> {
    const record = this.#records.get(id);
    return record && copy(record);
  }

  async list(state: InboxState | undefined, limit: number): Promise<InboxRecord[]> {
    const all = [...this.#records.values()].filter((record) => state === undefined || record.state === state);
    all.sort((a, b) => b.receivedAt - a.receivedAt);
    return all.slice(0, limit).map(copy);
  }

  async replay(id: string, now: number): Promise<InboxRecord> {
    const record = this.#records.get(id);
    if (!record) throw new InboxError('inbox_record_not_found', id, `No event ${JSON.stringify(id)} in the inbox ${this.where}.`);
    if (record.state !== 'dead' && record.state !== 'done') {
      throw new InboxError('inbox_not_replayable', id, `Event ${id} is ${record.state}: only a dead or done event can be replayed.`);
    }
    this.#done.delete(id);
    this.#move(record, 'pending');
    Object.assign(record, { source: 'replay', attempts: 0, nextAttemptAt: now, finishedAt: null, lastError: null });
    this.#due.push(now, id);
    return copy(record);
  }

  async purge(state: 'dead' | 'done', before: number): Promise<number> {
    let count = 0;
    for (const record of [...this.#records.values()]) {
      if (record.state !== state || (record.finishedAt ?? 0) >= before) continue;
      this.#drop(record);
      count++;
    }
    return count;
  }

  async stats(): Promise<InboxStats> {
    return { ...this.#counts };
  }

  async nextDue(): Promise<number | null> {
    for (;;) {
      const at = this.#due.peekAt();
      if (at === undefined) return null;
      const record = this.#records.get(this.#due.peekId()!);
      if (record && record.state === 'pending' && record.nextAttemptAt === at) return at;
      this.#due.pop();
    }
  }

  /** Lets another back end open the state; what runs here now is abandoned and runs again there. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#state.inUse = false;
  }

  #move(record: InboxRecord, state: InboxState): void {
    const was = isActive(record.state);
    if (was !== isActive(state)) this.#activeBytes += was ? -bodyBytes(record) : bodyBytes(record);
    this.#counts[record.state]--;
    this.#counts[state]++;
    record.state = state;
  }

  #drop(record: InboxRecord): void {
    this.#records.delete(record.id);
    this.#done.delete(record.id);
    this.#counts[record.state]--;
    if (isActive(record.state)) this.#activeBytes -= bodyBytes(record);
  }

  /** Done records are kept for `keepDoneMs` and at most `keepDone` of them, as in a file inbox. */
  #trim(now: number): void {
    const cutoff = now - this.#keepDoneMs;
    for (const id of this.#done) {
      const record = this.#records.get(id);
      if (record && this.#done.size <= this.#keepDone && (record.finishedAt ?? 0) > cutoff) return;
      if (record) this.#drop(record);
      else this.#done.delete(id);
    }
  }
}

/** Pending and running records are the ones `maxPending` and `maxPendingBytes` count. */
function isActive(state: InboxState): boolean {
  return state === 'pending' || state === 'running';
}

function bodyBytes(record: InboxRecord): number {
  return encoder.encode(record.body).byteLength;
}

/** Callers get copies: a record changes only through the back end's moves. */
function copy(record: InboxRecord): InboxRecord {
  return { ...record, keys: [...record.keys] };
}
