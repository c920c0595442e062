import { resolve } from 'node:path';
import { InboxError } from '../../protocol/errors.js';
import { FileLock } from '../../store/file-lock.js';
import { JournalFile } from '../../store/journal-file.js';
import { DueHeap } from './due-heap.js';
import type { AddOutcome, InboxBackend, InboxRecord, InboxState, InboxStats } from './record.js';

export interface FileInboxOptions {
  /** The JSON snapshot; its journal is `<file>.journal`, its lock `<file>.lock`. */
  file: string;
  /** `fdatasync` each group commit before the receiver answers. @default false */
  fsync?: boolean;
  /** Done records kept at most. */
  keepDone: number;
  /** Done records kept at most this long, in milliseconds. */
  keepDoneMs: number;
  /**
   * Handler runs an event gets (`retries + 1`): a record found `running` at open had its run ended by
   * the process's end, which counts; with this many runs it is dead rather than run again. Without it
   * (`cliphook inbox`), a record found running stays so, for the app's next start to decide.
   */
  maxAttempts?: number;
  clock: () => number;
}

/** `{ "version": 1, "records": [InboxRecord, …] }` */
interface InboxFile {
  version: 1;
  records: InboxRecord[];
}

/** A journal line: a whole record (added, replayed), a change to one (`{ id, state, … }`), or `{ id, purged: true }`. */
type Entry = Partial<InboxRecord> & { id: string; purged?: true };

/** Inboxes open in this process, by absolute path: two on one file would overwrite each other. */
const openInboxes = new Set<string>();

/**
 * The file inbox: every record in memory, each change appended to a journal with group commit (one
 * write for all the requests of a turn, as FileDeliveryStore does), the snapshot rewritten once the
 * journal is as long as it. One process per file (`<file>.lock`). A claim resolves once its `running`
 * line (with the attempt) is on disk, so a handler that ends the process has its run counted: the next
 * start runs the record again, or makes it dead once it had `maxAttempts` runs.
 */
export class FileInboxBackend implements InboxBackend {
  readonly where: string;
  readonly #records = new Map<string, InboxRecord>();
  readonly #due = new DueHeap();
  /** Done ids in the order they finished, oldest first: what the retention drops. */
  readonly #done = new Set<string>();
  /** Who runs each running record (memory only: after a restart none is running). */
  readonly #owners = new Map<string, string>();
  readonly #counts: InboxStats = { pending: 0, running: 0, dead: 0, done: 0 };
  /** Issue 30 follow-up item 1: UTF-8 bytes of the pending and running bodies, held here in memory. */
  #activeBytes = 0;
  readonly #journal: JournalFile<InboxFile, Entry>;
  readonly #lock: FileLock;
  readonly #path: string;
  readonly #keepDone: number;
  readonly #keepDoneMs: number;
  readonly #maxAttempts: number | undefined;
  readonly #clock: () => number;

  constructor({ file, fsync = false, keepDone, keepDoneMs, maxAttempts, clock }: FileInboxOptions) {
    this.#path = resolve(file);
    if (openInboxes.has(this.#path)) throw new TypeError(`${file} is already open by another inbox in this process: two inboxes on one file overwrite each other.`);
    this.where = file;
    this.#keepDone = keepDone;
    this.#keepDoneMs = keepDoneMs;
    this.#maxAttempts = maxAttempts;
    this.#clock = clock;
    this.#journal = new JournalFile<InboxFile, Entry>({
      file,
      fsync,
      snapshot: () => ({ version: 1, records: [...this.#records.values()] }),
      sizeOf: (snapshot) => (Array.isArray(snapshot?.records) ? snapshot.records.length : 0),
    });
    // Last, so nothing that can throw comes after it and leaves the lock held.
    this.#lock = FileLock.acquire(file, 'the receiver inbox');
    openInboxes.add(this.#path);
  }

  async open(): Promise<void> {
    let read;
    try {
      read = await this.#journal.read();
    } catch (error) {
      this.#release();
      // Issue 30 follow-up item 2: not moved aside as the delivery store does: it holds acknowledged events.
      const cause = (error as Error)?.cause;
      if (cause instanceof SyntaxError) throw new Error(unreadable(this.where, `is not valid JSON (${cause.message})`), { cause: error });
      throw error;
    }
    const snapshot = read.snapshot;
    if (snapshot !== null && (snapshot.version !== 1 || !Array.isArray(snapshot.records))) {
      this.#release();
      throw new Error(unreadable(this.where, 'is not a cliphook inbox file (expected {"version":1,"records":[…]})'));
    }
    for (const record of snapshot?.records ?? []) this.#records.set(record.id, record);
    for (const entry of read.entries) {
      if (entry === null || typeof entry !== 'object' || typeof entry.id !== 'string') continue;
      if (entry.purged) this.#records.delete(entry.id);
      else if (typeof entry.body === 'string') this.#records.set(entry.id, entry as InboxRecord);
      else {
        const found = this.#records.get(entry.id);
        if (found) this.#records.set(entry.id, { ...found, ...entry });
      }
    }
    const now = this.#clock();
    const done: InboxRecord[] = [];
    let recovered = 0;
    for (const record of this.#records.values()) {
      if (record.state === 'running' && this.#recover(record, now)) recovered++;
      this.#counts[record.state]++;
      if (isActive(record.state)) this.#activeBytes += bodyBytes(record);
      if (record.state === 'pending') this.#due.push(record.nextAttemptAt ?? now, record.id);
      if (record.state === 'done') done.push(record);
    }
    done.sort((a, b) => (a.finishedAt ?? 0) - (b.finishedAt ?? 0));
    for (const record of done) this.#done.add(record.id);
    this.#trim(now);
    // What the next start and `cliphook inbox` then read, rather than deciding again from `running`.
    if (recovered > 0) await this.#journal.commit();
  }

  async add(record: InboxRecord, maxPending: number, maxPendingBytes = Infinity): Promise<AddOutcome> {
    if (this.#records.has(record.id)) {
      // Its line may still be queued after a failed write: this caller too learns once it is durable.
      await this.#journal.commit();
      return 'exists';
    }
    if (this.#counts.pending + this.#counts.running >= maxPending) return 'full';
    const bytes = bodyBytes(record);
    if (this.#activeBytes + bytes > maxPendingBytes) return 'full';
    this.#records.set(record.id, record);
    this.#counts.pending++;
    this.#activeBytes += bytes;
    this.#due.push(record.nextAttemptAt ?? record.receivedAt, record.id);
    this.#journal.append(record);
    await this.#journal.commit();
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
      this.#journal.append({ id: record.id, state: 'running', attempts: record.attempts, nextAttemptAt: null });
      out.push({ ...record, keys: [...record.keys] });
    }
    if (out.length === 0) return out;
    try {
      // The run is on disk before its handler starts: a handler that ends the process still counts.
      await this.#journal.commit();
    } catch (error) {
      // Not run: pending again as before, and the line saying so follows the `running` one, still queued.
      for (const claimed of out) {
        const record = this.#records.get(claimed.id);
        if (record?.state !== 'running' || this.#owners.get(record.id) !== owner) continue;
        this.#owners.delete(record.id);
        this.#move(record, 'pending');
        record.attempts--;
        record.nextAttemptAt = now;
        this.#due.push(now, record.id);
        this.#journal.append({ id: record.id, state: 'pending', attempts: record.attempts, nextAttemptAt: now });
      }
      throw error;
    }
    return out;
  }

  async settle(outcome: InboxRecord, owner: string, now: number): Promise<boolean> {
    const record = this.#records.get(outcome.id);
    if (!record || record.state !== 'running' || this.#owners.get(record.id) !== owner) return false;
    this.#owners.delete(record.id);
    const { state, nextAttemptAt, finishedAt, lastError } = outcome;
    this.#move(record, state);
    Object.assign(record, { nextAttemptAt, finishedAt, lastError });
    if (state === 'pending') this.#due.push(nextAttemptAt ?? now, record.id);
    this.#journal.append({ id: record.id, state, nextAttemptAt, finishedAt, lastError });
    if (state === 'done') {
      this.#done.add(record.id);
      this.#trim(now);
    }
    await this.#journal.commit();
    return true;
  }

  async get(id: string): Promise<InboxRecord | undefined> {
    const record = this.#records.get(id);
    return record && { ...record, keys: [...record.keys] };
  }

  async list(state: InboxState | undefined, limit: number): Promise<InboxRecord[]> {
    const all = [...this.#records.values()].filter((record) => state === undefined || record.state === state);
    all.sort((a, b) => b.receivedAt - a.receivedAt);
    return all.slice(0, limit).map((record) => ({ ...record, keys: [...record.keys] }));
  }

  async replay(id: string, now: number): Promise<InboxRecord> {
    const record = this.#records.get(id);
    if (!record) throw new InboxError('inbox_record_not_found', id, `No event ${JSON.stringify(id)} in the inbox ${this.where}.`);
    if (record.state !== 'dead' && record.state !== 'done') {
      throw new InboxError('inbox_not_replayable', id, `Event ${id} is ${record.state}: only a dead or done event can be replayed.`);
    }
    if (record.state === 'done') this.#done.delete(id);
    this.#move(record, 'pending');
    Object.assign(record, { source: 'replay', attempts: 0, nextAttemptAt: now, finishedAt: null, lastError: null });
    this.#due.push(now, id);
    this.#journal.append(record);
    await this.#journal.commit();
    return { ...record, keys: [...record.keys] };
  }

  async purge(state: 'dead' | 'done', before: number): Promise<number> {
    let count = 0;
    for (const record of [...this.#records.values()]) {
      if (record.state !== state || (record.finishedAt ?? 0) >= before) continue;
      this.#drop(record);
      this.#journal.append({ id: record.id, purged: true });
      count++;
    }
    if (count > 0) await this.#journal.commit();
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

  async close(): Promise<void> {
    try {
      await this.#journal.close();
    } finally {
      this.#release();
    }
  }

  /**
   * A record found `running` at open: its process ended during that run, which counts. Run again while
   * runs remain, else dead, as a handler that failed its last run. Without `maxAttempts` it stays running.
   */
  #recover(record: InboxRecord, now: number): boolean {
    if (this.#maxAttempts === undefined) return false;
    if (record.attempts < this.#maxAttempts) Object.assign(record, { state: 'pending', nextAttemptAt: now });
    else {
      const lastError = `The process ended while the inbox was running it (run ${record.attempts} of ${this.#maxAttempts}): a handler that exits or crashes the process?`;
      Object.assign(record, { state: 'dead', nextAttemptAt: null, finishedAt: now, lastError });
    }
    const { id, state, nextAttemptAt, finishedAt, lastError } = record;
    this.#journal.append({ id, state, nextAttemptAt, finishedAt, lastError });
    return true;
  }

  #release(): void {
    this.#lock.release();
    openInboxes.delete(this.#path);
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

  /** Issue 30 item 1: done records are kept for `keepDoneMs` and at most `keepDone` of them; the snapshot then forgets them. */
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
  return Buffer.byteLength(record.body);
}

/**
 * Issue 30 follow-up item 2: the one line an operator sees (in every 503's onError, and from `cliphook
 * inbox`) when the snapshot cannot be read: the file, why the receiver refuses, and what to do.
 */
function unreadable(file: string, why: string): string {
  return (
    `The receiver inbox ${file} ${why}. It holds events already acknowledged, so the receiver answers 503 until it opens. ` +
    `Stop the app, copy ${file} and ${file}.journal, then repair the JSON, or move ${file} aside to start from the journal alone ` +
    `(the pending and dead events only the file held are then lost): see "A corrupt inbox file" in cliphook's docs/inbox.md.`
  );
}
