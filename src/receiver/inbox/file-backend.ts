import { resolve } from 'node:path';
import { FileLock } from '../../store/file-lock.js';
import { LineJournal } from '../../store/line-journal.js';
import { INBOX_FILE_HEADER } from './inbox-file-format.js';
import { loadInboxFiles, nodeInboxFileIo, unreadable, UnreadableInboxError, type InboxFileIo } from './file-inbox-load.js';
import { NODE_TIMERS, type FileInboxOptions } from './file-inbox-options.js';
import type { AddOutcome, InboxBackend, InboxRecord, InboxState, InboxStats } from './record.js';
import { InboxRecordSet } from './record-set.js';

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
  readonly #records: InboxRecordSet;
  readonly #journal: LineJournal;
  readonly #io: InboxFileIo;
  readonly #lock: FileLock | null;
  readonly #path: string;
  readonly #readOnly: boolean;
  readonly #clock: () => number;

  constructor(options: FileInboxOptions) {
    const { file, fsync = false, readOnly = false, clock, timers = NODE_TIMERS, io = nodeInboxFileIo, compactAfterBytes } = options;
    this.#path = resolve(file);
    if (!readOnly && openInboxes.has(this.#path)) throw new TypeError(`${file} is already open by another inbox in this process: two inboxes on one file overwrite each other.`);
    this.where = file;
    this.#readOnly = readOnly;
    this.#clock = clock;
    this.#io = io;
    this.#records = new InboxRecordSet({ ...options, write: (entry) => void this.#journal.queue(JSON.stringify(entry)) });
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
      FileLock.assertFree(file, 'receiver inbox');
      this.#lock = null;
      return;
    }
    // Last, so nothing that can throw comes after it and leaves the lock held.
    this.#lock = FileLock.acquire(file, 'receiver inbox');
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
    // An older format is migrated, and a line cut short is rewritten away: lines appended after it would
    // leave it in the middle of the journal, where it reads as damage.
    const rewrite = loaded.legacy || loaded.torn;
    if (rewrite && !this.#readOnly) this.#journal.rewriteSoon();
    // Read only, a record found running stays so, for the app's next start to decide.
    const changed = this.#records.load(this.#clock(), { records: loaded.records.values(), recover: !this.#readOnly });
    if (this.#readOnly || !(changed || rewrite)) return;
    // What the next start and `cliphook inbox` then read, rather than deciding again from `running`. A
    // failed write is not the inbox's end: the lines stay queued, the journal tries again, and the next
    // claim waits for that write (and reports it) before any handler runs.
    await this.#journal.commit().catch(() => undefined);
  }

  async add(record: InboxRecord, maxPending: number, maxPendingBytes = Infinity): Promise<AddOutcome> {
    this.#writable();
    const added = this.#records.add(record, maxPending, maxPendingBytes);
    // An existing record's line may still be queued after a failed write: this caller too learns once it is durable.
    if (added !== 'full') await this.#journal.commit();
    return added;
  }

  async claim(now: number, _leaseUntil: number, owner: string, limit: number): Promise<InboxRecord[]> {
    this.#writable();
    const claimed = this.#records.claim(now, owner, limit);
    if (claimed.length === 0) return claimed;
    try {
      // The run is on disk before its handler starts: a handler that ends the process still counts.
      if (!this.#journal.writeNow()) await this.#journal.commit();
    } catch (error) {
      // Not run: pending again as before, and the line saying so follows the `running` one, still queued.
      this.#records.unclaim(claimed, owner, now);
      throw error;
    }
    return claimed;
  }

  async settle(outcome: InboxRecord, owner: string, now: number): Promise<boolean> {
    this.#writable();
    if (!this.#records.settle(outcome, owner, now)) return false;
    await this.#journal.commit();
    return true;
  }

  async get(id: string): Promise<InboxRecord | undefined> {
    return this.#records.get(id);
  }

  async list(state: InboxState | undefined, limit: number): Promise<InboxRecord[]> {
    return this.#records.list(state, limit);
  }

  async replay(id: string, now: number): Promise<InboxRecord> {
    this.#writable();
    const record = this.#records.replay(id, now, this.where);
    await this.#journal.commit();
    return record;
  }

  async purge(state: 'dead' | 'done', before: number): Promise<number> {
    this.#writable();
    const count = this.#records.purge(state, before);
    if (count > 0) await this.#journal.commit();
    return count;
  }

  async stats(): Promise<InboxStats> {
    return this.#records.stats();
  }

  async nextDue(): Promise<number | null> {
    return this.#records.nextDue();
  }

  /** Writes what is queued and closes the journal; its file is closed even when that last write fails. */
  async close(): Promise<void> {
    try {
      await this.#journal.close();
    } finally {
      this.#release();
    }
  }

  #writable(): void {
    if (this.#readOnly) throw new Error(`The inbox ${this.where} is open read-only.`);
  }

  *#snapshotLines(): Iterable<string> {
    for (const record of this.#records.values()) yield JSON.stringify(record);
  }

  #release(): void {
    this.#lock?.release();
    if (this.#lock) openInboxes.delete(this.#path);
  }
}
