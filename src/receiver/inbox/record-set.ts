// The inbox's records in memory and every move between their states, shared by the file and the memory back
// ends: the file one writes each change this makes as a journal line, the memory one keeps nothing else.
import { InboxError } from '../../protocol/errors.js';
import { DueHeap } from './due-heap.js';
import type { InboxEntry } from './inbox-file-format.js';
import type { AddOutcome, InboxRecord, InboxState, InboxStats } from './record.js';
import { Retention, type RetentionOptions } from './retention.js';

export interface InboxRecordSetOptions extends RetentionOptions {
  /** Where the records are kept (a memory inbox's state outlives its back end). @default a new map */
  records?: Map<string, InboxRecord>;
  /**
   * Handler runs an event gets (`retries + 1`): a record found `running` at `load` had its run ended by
   * the process's end (or abandoned past `closeTimeout`), which counts; with this many runs it is dead
   * rather than run again. Without it a record found running stays so, for the app's next start to decide.
   */
  maxAttempts?: number;
  /** Told of each change, as the journal line that makes it again: what a file writes. @default nothing */
  write?: (entry: InboxEntry) => void;
}

/**
 * The records by id with what each operation needs at its own cost: a heap of due times (a claim costs
 * what it takes), counts per state and the pending bodies' bytes (`maxPending`, `maxPendingBytes` and
 * `stats()` cost nothing), the owner of each running record, and the retention of dead and done ones.
 * Callers get copies: a record changes only through these moves.
 */
export class InboxRecordSet {
  readonly #records: Map<string, InboxRecord>;
  readonly #due = new DueHeap();
  readonly #retention: Retention;
  /** Who runs each running record (never stored: after a restart none is running). */
  readonly #owners = new Map<string, string>();
  readonly #counts: InboxStats = { pending: 0, running: 0, dead: 0, done: 0 };
  /** UTF-8 bytes of the pending and running bodies. */
  #activeBytes = 0;
  readonly #maxAttempts: number | undefined;
  readonly #write: (entry: InboxEntry) => void;

  constructor(options: InboxRecordSetOptions) {
    this.#records = options.records ?? new Map();
    this.#maxAttempts = options.maxAttempts;
    this.#write = options.write ?? (() => undefined);
    this.#retention = new Retention(options, (record) => this.#drop(record));
  }

  /**
   * Takes what a previous run left (`records`, or what the map given already holds) and builds the
   * indexes; with `recover`, a record found running counts that run (see `maxAttempts`) and the retention
   * trims. Answers whether anything changed, for the owner to write.
   */
  load(now: number, { records = [...this.#records.values()], recover = true }: { records?: Iterable<InboxRecord>; recover?: boolean } = {}): boolean {
    let changed = false;
    const finished: InboxRecord[] = [];
    for (const record of records) {
      // A record stored without its delivery id is keyed by it.
      record.deliveryId ??= record.id;
      this.#records.set(record.id, record);
      if (record.state === 'running' && recover && this.#recover(record, now)) changed = true;
      this.#counts[record.state]++;
      if (isActive(record.state)) this.#activeBytes += bodyBytes(record);
      if (record.state === 'pending') this.#due.push(record.nextAttemptAt ?? now, record.id);
      if (record.state === 'dead' || record.state === 'done') finished.push(record);
    }
    this.#retention.load(finished);
    if (recover && this.#retention.trim(now) > 0) changed = true;
    return changed;
  }

  has(id: string): boolean {
    return this.#records.has(id);
  }

  /** Stores a first-seen record unless `maxPending` records or `maxPendingBytes` of bodies are active. */
  add(record: InboxRecord, maxPending: number, maxPendingBytes: number): AddOutcome {
    if (this.#records.has(record.id)) return 'exists';
    if (this.#counts.pending + this.#counts.running >= maxPending) return 'full';
    const bytes = bodyBytes(record);
    if (this.#activeBytes + bytes > maxPendingBytes) return 'full';
    const stored = copy(record);
    this.#records.set(stored.id, stored);
    this.#counts[stored.state]++;
    this.#activeBytes += bytes;
    this.#due.push(stored.nextAttemptAt ?? stored.receivedAt, stored.id);
    this.#write(stored);
    return 'added';
  }

  /** Makes up to `limit` due pending records `running` for `owner`, each with its attempt counted. */
  claim(now: number, owner: string, limit: number): InboxRecord[] {
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
      this.#write({ id: record.id, state: 'running', attempts: record.attempts, nextAttemptAt: null });
      out.push(copy(record));
    }
    return out;
  }

  /** Takes back claims whose runs never started (their `running` line could not be written): pending again, due now. */
  unclaim(claimed: readonly InboxRecord[], owner: string, now: number): void {
    for (const { id } of claimed) {
      const record = this.#records.get(id);
      if (record?.state !== 'running' || this.#owners.get(id) !== owner) continue;
      this.#owners.delete(id);
      this.#move(record, 'pending');
      record.attempts--;
      record.nextAttemptAt = now;
      this.#due.push(now, id);
      this.#write({ id, state: 'pending', attempts: record.attempts, nextAttemptAt: now });
    }
  }

  /** Writes a run's outcome (`outcome` in its new state); `false` when `owner` does not hold the record. */
  settle(outcome: InboxRecord, owner: string, now: number): boolean {
    const record = this.#records.get(outcome.id);
    if (!record || record.state !== 'running' || this.#owners.get(record.id) !== owner) return false;
    this.#owners.delete(record.id);
    const { state, nextAttemptAt, finishedAt, lastError } = outcome;
    this.#move(record, state);
    Object.assign(record, { nextAttemptAt, finishedAt, lastError });
    if (state === 'pending') this.#due.push(nextAttemptAt ?? now, record.id);
    this.#write({ id: record.id, state, nextAttemptAt, finishedAt, lastError });
    if (state === 'done' || state === 'dead') {
      this.#retention.add(record);
      this.#retention.trim(now);
    }
    return true;
  }

  get(id: string): InboxRecord | undefined {
    const record = this.#records.get(id);
    return record && copy(record);
  }

  /** Up to `limit` records (of `state`), newest first. */
  list(state: InboxState | undefined, limit: number): InboxRecord[] {
    const all = [...this.#records.values()].filter((record) => state === undefined || record.state === state);
    all.sort((a, b) => b.receivedAt - a.receivedAt);
    return all.slice(0, limit).map(copy);
  }

  /** Makes a dead or done record pending again, as `source: 'replay'` with its attempts from 0; `where` names the inbox in errors. */
  replay(id: string, now: number, where: string): InboxRecord {
    const record = this.#records.get(id);
    if (!record) throw new InboxError('inbox_record_not_found', id, `No event ${JSON.stringify(id)} in the inbox ${where}.`);
    if (record.state !== 'dead' && record.state !== 'done') {
      throw new InboxError('inbox_not_replayable', id, `Event ${id} is ${record.state}: only a dead or done event can be replayed.`);
    }
    this.#retention.delete(record);
    this.#move(record, 'pending');
    Object.assign(record, { source: 'replay', attempts: 0, nextAttemptAt: now, finishedAt: null, lastError: null });
    this.#due.push(now, id);
    this.#write(record);
    return copy(record);
  }

  /** Drops the `state` records that finished before `before`; answers how many. */
  purge(state: 'dead' | 'done', before: number): number {
    let count = 0;
    for (const record of [...this.#records.values()]) {
      if (record.state !== state || (record.finishedAt ?? 0) >= before) continue;
      this.#drop(record);
      count++;
    }
    return count;
  }

  stats(): InboxStats {
    return { ...this.#counts };
  }

  /** When the earliest pending record is due; `null` when none is. */
  nextDue(): number | null {
    for (;;) {
      const at = this.#due.peekAt();
      if (at === undefined) return null;
      const record = this.#records.get(this.#due.peekId()!);
      if (record && record.state === 'pending' && record.nextAttemptAt === at) return at;
      this.#due.pop();
    }
  }

  /** The records themselves, for a snapshot written as the state stands. */
  values(): IterableIterator<InboxRecord> {
    return this.#records.values();
  }

  /** A record found `running`: run again while runs remain, else dead, as a handler that failed its last run. */
  #recover(record: InboxRecord, now: number): boolean {
    if (this.#maxAttempts === undefined) return false;
    if (record.attempts < this.#maxAttempts) Object.assign(record, { state: 'pending', nextAttemptAt: now });
    else {
      const lastError = `The process ended while the inbox was running it (run ${record.attempts} of ${this.#maxAttempts}): a handler that exits or crashes the process?`;
      Object.assign(record, { state: 'dead', nextAttemptAt: null, finishedAt: now, lastError });
    }
    const { id, state, nextAttemptAt, finishedAt, lastError } = record;
    this.#write({ id, state, nextAttemptAt, finishedAt, lastError });
    return true;
  }

  #move(record: InboxRecord, state: InboxState): void {
    const was = isActive(record.state);
    if (was !== isActive(state)) this.#activeBytes += was ? -bodyBytes(record) : bodyBytes(record);
    this.#counts[record.state]--;
    this.#counts[state]++;
    record.state = state;
  }

  /** Forgets a dead or done record, for good: a purge, or the retention. */
  #drop(record: InboxRecord): void {
    this.#records.delete(record.id);
    this.#retention.delete(record);
    this.#counts[record.state]--;
    if (isActive(record.state)) this.#activeBytes -= bodyBytes(record);
    this.#write({ id: record.id, purged: true });
  }
}

/** Pending and running records are the ones `maxPending` and `maxPendingBytes` count. */
function isActive(state: InboxState): boolean {
  return state === 'pending' || state === 'running';
}

function bodyBytes(record: InboxRecord): number {
  return Buffer.byteLength(record.body);
}

function copy(record: InboxRecord): InboxRecord {
  return { ...record, keys: [...record.keys] };
}
