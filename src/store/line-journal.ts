import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { GroupCommit } from './group-commit.js';
import { syncFolder } from './json-file.js';
import { encodeLines, type QueuedLine } from './line-encoding.js';
import { nodeLineFileIo, type LineFileIo } from './line-file-io.js';

/** Timers for the retry of failed writes; the relay passes its injected scheduler. */
export interface RetryTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export type { QueuedLine } from './line-encoding.js';

export interface LineJournalOptions {
  /** The snapshot; the journal is `<file>.journal` beside it. */
  file: string;
  /** The first line of every snapshot, which tells this format from older ones. */
  header: string;
  /** The owner's whole state as lines (no newline), written at compaction; it must hold every change queued so far. */
  snapshot: () => Iterable<string>;
  /** Journal bytes appended since the last compaction before the next one, at least. @default 67_108_864 */
  compactAfterBytes?: number;
  /** @default node:fs */
  io?: LineFileIo;
  timers: RetryTimers;
  /** Milliseconds since the epoch, for `failure.since`. */
  clock: () => number;
  /** How long after a failed write the next attempt starts by itself. @default 5_000 */
  retryMs?: number;
  /** Called once when writes start failing, and once when they succeed again (`null`). */
  onHealth?: (failure: Error | null) => void;
  /**
   * Flush each append to the storage device (`fdatasync`) before its commit resolves, and each snapshot
   * before its rename. @default false: the page cache, which a process crash does not lose.
   */
  fsync?: boolean;
  /** Called when a snapshot could not be written; the lines went to the journal instead. */
  onCompactionFailed?: (error: Error) => void;
  /**
   * Lines the owner makes at each write, after the queued ones: changes it summed up since the last write
   * (the relay's acknowledgements, one line per channel rather than one per event). They must hold after
   * every queued line; a failed write keeps them, like the others, for the next.
   */
  tail?: () => string[];
}

const NEWLINE = Buffer.from('\n');

/**
 * A snapshot file of lines plus an append-only journal of lines, with group commit: the owner keeps its
 * state in memory, `queue`s one line per change and awaits `commit()`. A write costs the size of the
 * changes since the last one, never of the whole state; once the journal has grown past
 * `compactAfterBytes` and past the snapshot, the next commit writes a fresh snapshot (streamed in
 * batches to a temporary file, renamed over the old one) and empties the journal, so compaction costs
 * at most as much again as the appends it follows. Both files are read as streams of lines, so neither
 * is bounded by the largest JavaScript string. Replaying must be idempotent: a crash between a
 * compaction's rename and its truncation leaves the journal's lines beside a snapshot that holds them.
 *
 * A failed write keeps its lines queued, reports the failure once through `onHealth`, and is tried
 * again every `retryMs` until one succeeds, so a relay that cannot persist recovers by itself.
 */
export class LineJournal {
  readonly file: string;
  readonly journal: string;
  readonly #temp: string;
  readonly #header: string;
  readonly #snapshot: () => Iterable<string>;
  readonly #compactAfterBytes: number;
  readonly #io: LineFileIo;
  readonly #timers: RetryTimers;
  readonly #retryMs: number;
  readonly #onHealth: (failure: Error | null) => void;
  readonly #onCompactionFailed: (error: Error) => void;
  readonly #clock: () => number;
  readonly #tail: (() => string[]) | undefined;
  readonly #fsync: boolean;
  readonly #group = new GroupCommit(() => this.#flush());
  #handle: FileHandle | null = null;
  #queued: QueuedLine[] = [];
  #journalBytes = 0;
  #snapshotBytes = 0;
  #compactNow = false;
  /** After a failed compaction, the journal size at which to try the next one. */
  #nextCompactionAt = 0;
  /** A failed append may have left part of a line: the next one starts on a fresh line. */
  #torn = false;
  #failure: { error: Error; since: number } | null = null;
  #retryTimer: unknown = null;
  #closed = false;
  /** A write (append or compaction) is under way: `writeNow` must not run beside it. */
  #writing = false;

  constructor({ file, header, snapshot, compactAfterBytes = 64 * 1024 * 1024, io = nodeLineFileIo, timers, clock, retryMs = 5_000, fsync = false, onHealth = () => undefined, onCompactionFailed = () => undefined, tail }: LineJournalOptions) {
    this.#fsync = fsync;
    this.#onCompactionFailed = onCompactionFailed;
    this.#tail = tail;
    this.#clock = clock;
    this.file = file;
    this.journal = `${file}.journal`;
    this.#temp = join(dirname(file), `.${basename(file)}.tmp`);
    this.#header = header;
    this.#snapshot = snapshot;
    this.#compactAfterBytes = compactAfterBytes;
    this.#io = io;
    this.#timers = timers;
    this.#retryMs = retryMs;
    this.#onHealth = onHealth;
  }

  /** `null` while writes succeed; else the last error and since when (ms since the epoch, from `at`). */
  get failure(): { error: Error; since: number } | null {
    return this.#failure;
  }

  /**
   * The lines of the snapshot (its header first) and of the journal, each `null` when the file does not
   * exist; then opens the journal for appending. Iterate both before the first commit.
   */
  async read(): Promise<{ snapshot: AsyncIterable<string> | null; journal: AsyncIterable<string> | null }> {
    const snapshotSize = await this.#io.size(this.file);
    const journalSize = await this.#io.size(this.journal);
    this.#snapshotBytes = Math.max(0, snapshotSize);
    this.#journalBytes = Math.max(0, journalSize);
    this.#handle = await this.#io.openAppend(this.journal);
    try {
      // A journal just created is durable only once its folder's entry for it is.
      if (this.#fsync && journalSize < 0) await syncFolder(this.journal);
    } catch (error) {
      await this.#handle.close();
      this.#handle = null;
      throw error;
    }
    // A torn last line (no newline) must not glue itself to the next entry.
    if (journalSize > 0) this.#torn = true;
    return { snapshot: snapshotSize >= 0 ? this.#io.lines(this.file) : null, journal: journalSize > 0 ? this.#io.lines(this.journal) : null };
  }

  /** The next commit writes a fresh snapshot: after loading a file of an older format, to migrate it. */
  rewriteSoon(): void {
    this.#compactNow = true;
  }

  /**
   * Queues one line (JSON, no newline); it reaches the file with the next commit, encoded there with the
   * others into one buffer. A function makes the line only then (and again if that write fails): a line
   * made earlier would wait as a string until the write, long enough to outlive the young generation.
   */
  queue(line: string | (() => string | null)): QueuedLine {
    const entry: QueuedLine = { text: line };
    this.#queued.push(entry);
    return entry;
  }

  /** Resolves once every line queued before this call is in the file; rejects when the write failed. */
  commit(): Promise<void> {
    return this.#group.commit();
  }

  /**
   * Writes what is queued at once, with one synchronous append, when the io has `appendSync`, no write is
   * under way, writes succeed and `fsync` is off; answers `false` when it cannot (await `commit()` then).
   * A few lines to the page cache cost microseconds, where a commit waits a turn of the event loop or
   * more. Throws when the write fails, keeping the lines queued for the next write, as a commit does.
   */
  writeNow(): boolean {
    const handle = this.#handle;
    if (handle === null || this.#writing || this.#fsync || this.#failure !== null || !this.#io.appendSync) return false;
    const lines = this.#queued;
    this.#queued = [];
    for (const text of this.#tail?.() ?? []) lines.push({ text });
    try {
      const { pieces, bytes } = encodeLines(lines);
      if (pieces.length > 0) {
        this.#io.appendSync(handle, this.#torn ? [NEWLINE, ...pieces] : pieces);
        this.#torn = false;
        this.#journalBytes += bytes;
      }
      for (const line of lines) line.text = null;
      return true;
    } catch (error) {
      this.#torn = true;
      this.#queued = lines.concat(this.#queued);
      this.#failed(error as Error);
      throw error;
    }
  }

  /** Writes what is queued (without compacting) and closes the journal. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timers.clearTimeout(this.#retryTimer);
    if (this.#handle === null) return;
    try {
      if (this.#queued.length > 0 || this.#tail) await this.commit();
    } finally {
      await this.#group.settled();
      await this.#handle.close();
      this.#handle = null;
    }
  }

  async #flush(): Promise<void> {
    const handle = this.#handle;
    if (handle === null) throw new Error(`${this.journal} is not open: read() first, and not after close().`);
    this.#writing = true;
    try {
      await this.#write(handle);
    } finally {
      this.#writing = false;
    }
  }

  async #write(handle: FileHandle): Promise<void> {
    const lines = this.#queued;
    this.#queued = [];
    for (const text of this.#tail?.() ?? []) lines.push({ text });
    let appending = false;
    try {
      // Each line encoded as it is made, into a few large buffers written at once.
      const { pieces, bytes } = encodeLines(lines);
      let compacted = false;
      if (this.#compactNow || this.#journalBytes + bytes >= Math.max(this.#compactAfterBytes, this.#snapshotBytes, this.#nextCompactionAt)) {
        this.#compactNow = false;
        try {
          // The snapshot is taken from the owner's state, which already holds `lines`.
          this.#snapshotBytes = await this.#io.replace(this.file, this.#temp, this.#snapshotPieces(), this.#fsync);
          compacted = true;
          this.#nextCompactionAt = 0;
          // If this fails, the journal's lines are only replayed again over a snapshot that holds them.
          await this.#io.truncate(handle);
          this.#journalBytes = 0;
          this.#torn = false;
        } catch (error) {
          // A disk too full for a whole snapshot may still take the lines: append them, and try again
          // once the journal has grown as much again, rather than failing every write until then.
          this.#nextCompactionAt = this.#journalBytes + Math.max(this.#compactAfterBytes, this.#snapshotBytes);
          this.#onCompactionFailed(error as Error);
        }
      }
      if (!compacted && (pieces.length > 0 || this.#failure !== null)) {
        // While failing, even an empty commit writes (a newline) to find out whether the disk took it.
        if (pieces.length === 0) pieces.push(NEWLINE);
        appending = true;
        await this.#io.append(handle, this.#torn ? [NEWLINE, ...pieces] : pieces);
        if (this.#fsync) await handle.datasync();
        this.#torn = false;
        this.#journalBytes += bytes;
      }
      for (const line of lines) line.text = null;
      this.#healthy();
    } catch (error) {
      // Keep the lines for the next commit; replaying is idempotent, so lines that did reach the file may come again.
      if (appending) this.#torn = true;
      this.#queued = lines.concat(this.#queued);
      this.#failed(error as Error);
      throw error;
    }
  }

  *#snapshotPieces(): Iterable<Buffer> {
    yield Buffer.from(`${this.#header}\n`, 'utf8');
    for (const line of this.#snapshot()) yield Buffer.from(`${line}\n`, 'utf8');
  }

  #healthy(): void {
    if (this.#failure === null) return;
    this.#failure = null;
    this.#onHealth(null);
  }

  #failed(error: Error): void {
    if (this.#failure === null) {
      this.#failure = { error, since: this.#clock() };
      this.#onHealth(error);
    } else this.#failure.error = error;
    if (this.#retryTimer !== null || this.#closed) return;
    this.#retryTimer = this.#timers.setTimeout(() => {
      this.#retryTimer = null;
      if (!this.#closed) this.commit().catch(() => undefined);
    }, this.#retryMs);
  }
}
