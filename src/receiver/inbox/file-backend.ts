import { resolve } from 'node:path';
import { InboxError } from '../../protocol/errors.js';
import { FileLock } from '../../store/file-lock.js';
import { LineJournal } from '../../store/line-journal.js';
import { DueHeap } from './due-heap.js';
import { INBOX_FILE_HEADER, type InboxEntry } from './inbox-file-format.js';
import { loadInboxFiles, nodeInboxFileIo, unreadable, UnreadableInboxError, type InboxFileIo } from './file-inbox-load.js';
import { NODE_TIMERS, type FileInboxOptions } from './file-inbox-options.js';
import type { AddOutcome, InboxBackend, InboxRecord, InboxState, InboxStats } from './record.js';
import { Retention } from './retention.js';

export { warnDeadDropped, type FileInboxOptions } from './file-inbox-options.js';

/** Inboxes open in this process, by absolute path: two on one file would overwrite each other. */
const openInboxes = new Set<string>();

/**
 * The file inbox: every record in memory, each change a journal line with group commit (one write for
 * all the requests of a turn, as FileDeliveryStore does), the snapshot rewritten as a stream of lines
 * once the journal is as long as it; neither file is ever one string, so neither is bounded by the
 * largest one. One process per file (`<file>.lock`). A claim resolves once its `running` line (with
 * the attempt) is on disk, so a handler that ends the process has its run counted: the next start runs
 * the record again, or makes it dead once it had `maxAttempts` runs.
 */
export class FileInboxBackend implements InboxBackend {
  readonly where: string;
  readonly #records = new Map<string, InboxRecord>();
  readonly #due = new DueHeap();
  readonly #retention: Retention;
  /** Who runs each running record (memory only: after a restart none is running). */
  readonly #owners = new Map<string, string>();
  readonly #counts: InboxStats = { pending: 0, running: 0, dead: 0, done: 0 };
  /** UTF-8 bytes of the pending and running bodies, held here in memory. */
  #activeBytes = 0;
  readonly #journal: LineJournal;
  readonly #io: InboxFileIo;
  readonly #lock: FileLock | null;
  readonly #path: string;
  readonly #maxAttempts: number | undefined;
  readonly #readOnly: boolean;
  readonly #clock: () => number;

  constructor(options: FileInboxOptions) {
    const { file, fsync = false, maxAttempts, readOnly = false, clock, timers = NODE_TIMERS, io = nodeInboxFileIo, compactAfterBytes } = options;
    this.#path = resolve(file);
    if (!readOnly && openInboxes.has(this.#path)) throw new TypeError(`${file} is already open by another inbox in this process: two inboxes on one file overwrite each other.`);
    this.where = file;
    this.#maxAttempts = maxAttempts;
    this.#readOnly = readOnly;
    this.#clock = clock;
    this.#io = io;
    this.#retention = new Retention(options, (record) => this.#drop(record));
    this.#journal = new LineJournal({
      file,
      header: INBOX_FILE_HEADER,
      snapshot: () => this.#snapshotLines(),
      io,
      timers,
      clock,
      fsync,
      ...(compactAfterBytes ? { compactAfterBytes } : {}),
    });
    if (readOnly) {
      FileLock.assertFree(file, 'the receiver inbox');
      this.#lock = null;
      return;
    }
    // Last, so nothing that can throw comes after it and leaves the lock held.
    this.#lock = FileLock.acquire(file, 'the receiver inbox');
    openInboxes.add(this.#path);
  }

  async open(): Promise<void> {
    let loaded;
    try {
      loaded = await loadInboxFiles(this.#io, this.#journal.file, this.#journal.journal);
      // Opened for appending only once what it holds is known good: a refused file is left as it was.
      if (!this.#readOnly) await this.#journal.read();
    } catch (error) {
      this.#release();
      // Not moved aside as the delivery store does: it holds acknowledged events.
      if (error instanceof UnreadableInboxError) throw new Error(unreadable(this.where, error.why), { cause: error });
      throw error;
    }
    if (loaded.legacy && !this.#readOnly) this.#journal.rewriteSoon();
    const now = this.#clock();
    let changed = loaded.legacy;
    const finished: InboxRecord[] = [];
    for (const record of loaded.records.values()) {
      this.#records.set(record.id, record);
      if (record.state === 'running' && !this.#readOnly && this.#recover(record, now)) changed = true;
      this.#counts[record.state]++;
      if (isActive(record.state)) this.#activeBytes += bodyBytes(record);
      if (record.state === 'pending') this.#due.push(record.nextAttemptAt ?? now, record.id);
      if (record.state === 'dead' || record.state === 'done') finished.push(record);
    }
    this.#retention.load(finished);
    if (this.#readOnly) return;
    if (this.#retention.trim(now) > 0) changed = true;
    // What the next start and `cliphook inbox` then read, rather than deciding again from `running`.
    if (changed) await this.#journal.commit();
  }

  async add(record: InboxRecord, maxPending: number, maxPendingBytes = Infinity): Promise<AddOutcome> {
    this.#writable();
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
    this.#append(record);
    await this.#journal.commit();
    return 'added';
  }

  async claim(now: number, _leaseUntil: number, owner: string, limit: number): Promise<InboxRecord[]> {
    this.#writable();
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
      this.#append({ id: record.id, state: 'running', attempts: record.attempts, nextAttemptAt: null });
      out.push({ ...record, keys: [...record.keys] });
    }
    if (out.length === 0) return out;
    try {
      // The run is on disk before its handler starts: a handler that ends the process still counts.
      if (!this.#journal.writeNow()) await this.#journal.commit();
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
        this.#append({ id: record.id, state: 'pending', attempts: record.attempts, nextAttemptAt: now });
      }
      throw error;
    }
    return out;
  }

  async settle(outcome: InboxRecord, owner: string, now: number): Promise<boolean> {
    this.#writable();
    const record = this.#records.get(outcome.id);
    if (!record || record.state !== 'running' || this.#owners.get(record.id) !== owner) return false;
    this.#owners.delete(record.id);
    const { state, nextAttemptAt, finishedAt, lastError } = outcome;
    this.#move(record, state);
    Object.assign(record, { nextAttemptAt, finishedAt, lastError });
    if (state === 'pending') this.#due.push(nextAttemptAt ?? now, record.id);
    this.#append({ id: record.id, state, nextAttemptAt, finishedAt, lastError });
    if (state === 'done' || state === 'dead') {
      this.#retention.add(record);
      this.#retention.trim(now);
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
    this.#writable();
    const record = this.#records.get(id);
    if (!record) throw new InboxError('inbox_record_not_found', id, `No event ${JSON.stringify(id)} in the inbox ${this.where}.`);
    if (record.state !== 'dead' && record.state !== 'done') {
      throw new InboxError('inbox_not_replayable', id, `Event ${id} is ${record.state}: only a dead or done event can be replayed.`);
    }
    this.#retention.delete(record);
    this.#move(record, 'pending');
    Object.assign(record, { source: 'replay', attempts: 0, nextAttemptAt: now, finishedAt: null, lastError: null });
    this.#due.push(now, id);
    this.#append(record);
    await this.#journal.commit();
    return { ...record, keys: [...record.keys] };
  }

  async purge(state: 'dead' | 'done', before: number): Promise<number> {
    this.#writable();
    let count = 0;
    for (const record of [...this.#records.values()]) {
      if (record.state !== state || (record.finishedAt ?? 0) >= before) continue;
      this.#drop(record);
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

  /** Writes what is queued and closes the journal; its file is closed even when that last write fails. */
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
    this.#append({ id, state, nextAttemptAt, finishedAt, lastError });
    return true;
  }

  #writable(): void {
    if (this.#readOnly) throw new Error(`The inbox ${this.where} is open read-only.`);
  }

  #append(entry: InboxEntry): void {
    this.#journal.queue(JSON.stringify(entry));
  }

  *#snapshotLines(): Iterable<string> {
    for (const record of this.#records.values()) yield JSON.stringify(record);
  }

  #release(): void {
    this.#lock?.release();
    if (this.#lock) openInboxes.delete(this.#path);
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
    this.#append({ id: record.id, purged: true });
  }
}

/** Pending and running records are the ones `maxPending` and `maxPendingBytes` count. */
function isActive(state: InboxState): boolean {
  return state === 'pending' || state === 'running';
}

function bodyBytes(record: InboxRecord): number {
  return Buffer.byteLength(record.body);
}
