import { writeSync } from 'node:fs';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { GroupCommit } from './group-commit.js';
import { JsonFile, syncFolder } from './json-file.js';

export interface JournalFileOptions<S, E = unknown> {
  /** The snapshot, a lowdb JSON document; the journal is `<file>.journal` beside it. */
  file: string;
  /** The owner's whole current state, written at compaction. It must include every appended entry. */
  snapshot: () => S;
  /** How many entries a snapshot holds: compaction waits until the journal is at least this long. */
  sizeOf: (snapshot: S) => number;
  /** Journal lines appended since the last compaction before the next one, at least. @default 10_000 */
  compactAfter?: number;
  /** Called with each entry line that could not be parsed (a torn last line after a crash). */
  onBadLine?: (line: string) => void;
  /**
   * Serialises the snapshot (see `JsonFileOptions.stringify`); defaults to `JSON.stringify`. An owner
   * that keeps its rows as text (`RowChunks`) returns them as pieces.
   */
  stringify?: (snapshot: S) => string | readonly Uint8Array[];
  /**
   * Flush each group commit to the storage device (`fdatasync`, off the event loop) before its callers
   * resume, and each snapshot before and after its rename. @default false: the page cache, which a
   * process crash does not lose and a power cut may.
   */
  fsync?: boolean;
  /**
   * Called as each write starts, before it takes the queued entries: an owner may `append` here what it
   * held back in case a later entry made it unnecessary (the inbox's `running` line).
   */
  beforeWrite?: () => void;
}

export interface JournalCloseOptions {
  /** Write a fresh snapshot even when nothing was appended since the last one. @default false */
  compact?: boolean;
}

/**
 * A snapshot plus an append-only journal, with group commit. The owner keeps its state in memory,
 * `append`s one small JSON entry per change and awaits `commit()`: every commit asked for while a write
 * runs shares the next single append, so a write costs the size of the changes, not of the whole state
 * (rewriting a 10 MB document per group commit capped the receiver's file store at a third of a bare
 * Express route). When the journal has grown past `compactAfter` and past the snapshot's size, the next
 * commit writes a fresh snapshot (atomic rename through lowdb) and empties the journal, so the cost of
 * compaction is amortised over at least as many appends as the snapshot holds.
 *
 * On read, the owner gets the snapshot and then the journal's entries in order; replaying them must be
 * idempotent, since a crash between a compaction's rename and its truncation leaves both.
 */
export class JournalFile<S, E> {
  readonly file: string;
  readonly journal: string;
  readonly #json: JsonFile<S>;
  readonly #compactAfter: number;
  readonly #onBadLine: (line: string) => void;
  /** Opened by the first write after read(), not by read() itself. */
  #handle: FileHandle | null = null;
  /** Between read() and close(): commits may write. */
  #readable = false;
  #queued: string[] = [];
  /** A failed append may have left part of a line: the next one starts on a fresh line. */
  #torn = false;
  readonly #group = new GroupCommit(() => this.#flush());
  #sinceCompaction = 0;
  #snapshotSize = 0;
  #compactNow = false;
  #writes = 0;
  #compactions = 0;

  readonly #sizeOf: (snapshot: S) => number;
  readonly #fsync: boolean;
  readonly #beforeWrite: (() => void) | undefined;

  constructor({ file, snapshot, sizeOf, compactAfter = 10_000, onBadLine = () => undefined, stringify, fsync = false, beforeWrite }: JournalFileOptions<S, E>) {
    if (!(Number.isSafeInteger(compactAfter) && compactAfter > 0)) {
      throw new TypeError(`Expected \`compactAfter\` to be a positive integer, got ${compactAfter}.`);
    }
    this.file = file;
    this.journal = `${file}.journal`;
    this.#sizeOf = sizeOf;
    this.#json = new JsonFile<S>({
      file,
      snapshot: () => {
        const state = snapshot();
        this.#snapshotSize = sizeOf(state);
        return state;
      },
      ...(stringify ? { stringify } : {}),
      fsync,
    });
    this.#fsync = fsync;
    this.#beforeWrite = beforeWrite;
    this.#compactAfter = compactAfter;
    this.#onBadLine = onBadLine;
  }

  /** Appends of the journal plus snapshot writes so far: group commit keeps this far below the commits. */
  get writes(): number {
    return this.#writes;
  }

  get compactions(): number {
    return this.#compactions;
  }

  /**
   * Reads the snapshot (`null` when there is none; a JsonFile error when it is not JSON) and the journal's
   * entries. The journal is opened for appending by the first commit, not here: an owner that refuses
   * what it read (not its file, a newer format) and drops this object leaves no file handle open, which
   * Node would close on garbage collection with a DEP0137 warning.
   */
  async read(): Promise<{ snapshot: S | null; entries: E[] }> {
    const snapshot = await this.#json.read();
    this.#snapshotSize = snapshot === null ? 0 : this.#sizeOf(snapshot);
    let text = '';
    try {
      text = await readFile(this.journal, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const entries: E[] = [];
    for (const line of text.split('\n')) {
      if (line === '') continue;
      try {
        const entry = JSON.parse(line) as E;
        entries.push(entry);
        this.#sinceCompaction++;
      } catch {
        this.#onBadLine(line);
      }
    }
    // A torn last line (no newline) must not glue itself to the next entry: the next append starts a line.
    if (text !== '' && !text.endsWith('\n')) this.#torn = true;
    this.#readable = true;
    return { snapshot, entries };
  }

  /** Queues one entry; it reaches the file with the next commit. Returns the entry's JSON, for owners that keep it. */
  append(entry: E): string {
    const json = JSON.stringify(entry);
    this.#queued.push(`${json}\n`);
    return json;
  }

  /** Queues one entry its owner has serialised already (`''` queues a blank line, which reading skips). */
  appendText(json: string): void {
    this.#queued.push(`${json}\n`);
  }

  /** Resolves once every entry appended before this call is in the file. */
  commit(): Promise<void> {
    return this.#group.commit();
  }

  /**
   * Writes what is queued, compacts, and closes the journal. With nothing queued and nothing appended since
   * the last compaction it writes nothing, unless `compact` asks for a fresh snapshot anyway (an owner whose
   * state changed in place, never appended, as the service store's counters do).
   */
  async close({ compact = false }: JournalCloseOptions = {}): Promise<void> {
    if (!this.#readable) return;
    if (compact || this.#queued.length > 0 || this.#sinceCompaction > 0) {
      // Leave a clean snapshot and an empty journal, so the next start reads one document.
      this.#compactNow = true;
      await this.commit();
    }
    await this.#group.settled();
    this.#readable = false;
    await this.#handle?.close();
    this.#handle = null;
  }

  async #flush(): Promise<void> {
    if (!this.#readable) throw new Error(`${this.journal} is not open: read() first, and not after close().`);
    const handle = this.#handle ?? (await this.#open());
    this.#beforeWrite?.();
    const lines = this.#queued;
    this.#queued = [];
    let appending = false;
    try {
      if (this.#compactNow || this.#sinceCompaction + lines.length >= Math.max(this.#compactAfter, this.#snapshotSize)) {
        // The snapshot is taken from the owner's state, which already holds `lines`.
        await this.#compact(handle);
        this.#compactNow = false;
        this.#writes++;
      } else if (lines.length > 0) {
        appending = true;
        const text = lines.join('');
        // Replaying is idempotent, so lines of a failed append that did reach the file may come again.
        appendSync(handle.fd, this.#torn ? `\n${text}` : text);
        // Off the event loop: requests keep coming and join the next group while the disk flushes.
        if (this.#fsync) await handle.datasync();
        this.#torn = false;
        this.#sinceCompaction += lines.length;
        this.#writes++;
      }
    } catch (error) {
      // Keep the entries for the next commit; this one's callers learn that theirs may not be durable.
      if (appending) this.#torn = true;
      this.#queued = lines.concat(this.#queued);
      throw error;
    }
  }

  /** Opens the journal for appending, on the first write after read(). */
  async #open(): Promise<FileHandle> {
    const handle = await open(this.journal, 'a', 0o600);
    try {
      // A journal just created is durable only once its folder's entry for it is.
      if (this.#fsync) await syncFolder(this.journal);
    } catch (error) {
      await handle.close();
      throw error;
    }
    this.#handle = handle;
    return handle;
  }

  async #compact(handle: FileHandle): Promise<void> {
    await this.#json.commit();
    // Entries appended to the journal so far are all in the snapshot just written; later ones are
    // still queued, so emptying the journal now loses nothing.
    await handle.truncate(0);
    this.#sinceCompaction = 0;
    this.#torn = false;
    this.#compactions++;
  }
}

/**
 * Appends a group commit's lines with one synchronous write. A batch is a few kilobytes going to the
 * page cache (no fsync), which takes microseconds; handing it to libuv's thread pool instead costs two
 * cross-thread wake-ups per batch and holds every waiting reply until a pool thread gets a core: on two
 * cores that was about 5% of the receiver's throughput (bench/middleware.ts). pino's sonic-boom makes the
 * same trade for log files. Compaction, a whole snapshot, stays asynchronous.
 */
function appendSync(fd: number, text: string): void {
  let bytes = Buffer.from(text, 'utf8');
  // A full disk often takes part of a buffer, then throws on the next call; loop over short writes.
  while (bytes.length > 0) {
    const written = writeSync(fd, bytes);
    if (written <= 0) throw new Error('The journal took no bytes.');
    bytes = bytes.subarray(written);
  }
}
