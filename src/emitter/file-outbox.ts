import { mkdir, readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { JsonFile } from '../store/json-file.js';
import type { Outbox } from './outbox.js';
import { CLOSE, OPEN, repairTornFile, salvageRows, SEPARATOR, serialiseRecord, toRecord, utf8 } from './outbox-format.js';
import type { DeliveryRecord } from './types.js';

export interface FileOutboxOptions {
  /**
   * The JSON file. It holds each delivery's signing secret (retries after a restart must be signed),
   * so keep it out of version control and readable by the emitting process only.
   * @default '.cliphook/outbox.json'
   */
  file?: string;
}

/** Where `FileOutbox` keeps deliveries unless told otherwise, relative to the working directory. */
export const DEFAULT_OUTBOX_FILE = '.cliphook/outbox.json';

// Files held by an open FileOutbox in this process: two outboxes on one file would overwrite each
// other's writes and lose deliveries, so the second is refused when it is created.
const openFiles = new Set<string>();

/**
 * The embedded default outbox: a lowdb JSON file (atomic rename writes) with group commit, so a burst
 * of sends costs a couple of writes, not one each. A delivery is in the file before its first attempt.
 * One outbox per file: a second one on a file that is open in this process is a TypeError until the
 * first is closed (`emitter.stop()` closes it); several processes on one file are not detected (the
 * CLI's commands share theirs through `SharedFileOutbox`). A torn file (not valid JSON) is copied aside
 * as `<file>.torn-<ms>` and every complete delivery in it is kept, with a warning.
 * @example createEmitter({ store: new FileOutbox({ file: '.cliphook/outbox.json' }) })
 */
export class FileOutbox implements Outbox {
  readonly file: string;
  readonly #json: JsonFile<unknown>;
  readonly #records = new Map<string, DeliveryRecord>();
  // Each record's serialised form is kept, as UTF-8 bytes, and reused by every write until its next
  // save(), so a write re-serialises and re-encodes only what changed. Deliveries waiting for a retry are the exception: they can be
  // 100,000 at a time for hours, so they are serialised at each write instead of costing memory twice.
  readonly #lines = new Map<string, Buffer>();
  #loaded: Promise<void> | null = null;
  /** A save() or delete() whose change no write has taken yet (or whose write failed). */
  #dirty = false;
  readonly #key: string;

  constructor({ file = DEFAULT_OUTBOX_FILE }: FileOutboxOptions = {}) {
    if (typeof file !== 'string' || file.length === 0) {
      throw new TypeError(`Expected \`file\` to be a non-empty path, got ${JSON.stringify(file)}.`);
    }
    this.#key = resolve(file);
    if (openFiles.has(this.#key)) {
      throw new TypeError(`Expected \`file\` to be free, but ${file} is already open by another FileOutbox in this process; close() it first.`);
    }
    openFiles.add(this.#key);
    this.file = file;
    this.#json = new JsonFile<unknown>({ file, snapshot: () => ({}), stringify: () => this.#serialise() });
  }

  /** Writes that reached the disk so far (group commit keeps this far below the number of saves). */
  get writes(): number {
    return this.#json.writes;
  }

  async load(): Promise<DeliveryRecord[]> {
    await this.#ensureLoaded();
    return [...this.#records.values()].map((record) => ({ ...record, attempts: [...record.attempts] }));
  }

  async save(record: DeliveryRecord): Promise<void> {
    await this.#ensureLoaded();
    this.#records.set(record.id, record);
    this.#lines.delete(record.id);
    await this.#commit();
  }

  async delete(ids: readonly string[]): Promise<void> {
    await this.#ensureLoaded();
    for (const id of ids) {
      this.#records.delete(id);
      this.#lines.delete(id);
    }
    await this.#commit();
  }

  /**
   * Writes what is not yet on disk, if anything, and frees the file for another outbox. An outbox that
   * only loaded never writes: another process (`trigger --retry`) may have changed the file since.
   */
  async close(): Promise<void> {
    try {
      // A file that failed to load was reported by load(), and must not be overwritten now.
      const loaded = this.#loaded && (await this.#loaded.then(() => true, () => false));
      if (loaded && this.#dirty) await this.#commit();
    } finally {
      openFiles.delete(this.#key);
    }
  }

  async #commit(): Promise<void> {
    this.#dirty = true;
    try {
      await this.#json.commit();
    } catch (error) {
      this.#dirty = true; // the write that took the change failed: close() tries again
      throw error;
    }
  }

  #ensureLoaded(): Promise<void> {
    this.#loaded ??= this.#read();
    return this.#loaded;
  }

  async #read(): Promise<void> {
    // The file holds signing secrets: a folder this call creates is private to its owner (0700).
    await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
    let data: { version?: unknown; deliveries?: unknown } | null;
    try {
      data = (await this.#json.read()) as typeof data;
    } catch (error) {
      if (!((error as Error).cause instanceof SyntaxError)) throw error;
      return this.#recover();
    }
    if (data === null) return;
    if (data.version !== 1 || !Array.isArray(data.deliveries)) {
      throw new Error(`${this.file} is not a cliphook outbox file (expected version 1).`);
    }
    for (const row of data.deliveries as unknown[]) {
      const record = toRecord(row);
      if (!record) throw new Error(`${this.file} holds a malformed delivery: ${JSON.stringify(row).slice(0, 120)}`);
      this.#records.set(record.id, record);
    }
  }

  /**
   * A torn file (a crash of the machine mid-write on some file systems, a full disk) must not stop every
   * delivery: keep a copy for inspection, take every complete delivery it holds, and write them back.
   * Until that write succeeds the torn file stays where it is (load() fails, the next one tries again).
   */
  async #recover(): Promise<void> {
    const text = await readFile(this.file, 'utf8');
    const rows = salvageRows(text);
    for (const row of rows) {
      const record = toRecord(row)!;
      this.#records.set(record.id, record);
    }
    const aside = await repairTornFile(this.file, text, Date.now(), () => this.#json.commit());
    process.emitWarning(`${this.file} was torn (not valid JSON): recovered ${rows.length} deliveries from it, kept as ${aside}.`, {
      code: 'CLIPHOOK_STORE_RECOVERED',
    });
  }

  /** The document as pieces the file is written from in one writev: no join, no re-encoding. */
  #serialise(): Uint8Array[] {
    this.#dirty = false; // this write takes every change made so far
    const pieces: Uint8Array[] = [OPEN];
    for (const record of this.#records.values()) {
      let line = this.#lines.get(record.id);
      if (line === undefined) {
        line = utf8(serialiseRecord(record));
        if (!(record.state === 'pending' && record.attempts.length > 0)) this.#lines.set(record.id, line);
      }
      if (pieces.length > 1) pieces.push(SEPARATOR);
      pieces.push(line);
    }
    pieces.push(CLOSE);
    return pieces;
  }
}
