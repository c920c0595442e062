import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Low } from 'lowdb';
import { DataFile } from 'lowdb/node';

export interface JsonFileOptions<T> {
  /** Path of the JSON file; its folder is created on open. */
  file: string;
  /** Builds the document to write from the owner's in-memory state, at write time. */
  snapshot: () => T;
  /**
   * Serialises the snapshot; defaults to `JSON.stringify`. Owners with many immutable records pass one
   * that joins cached per-record strings.
   */
  stringify?: (data: T) => string;
}

/**
 * A JSON document on disk (lowdb, atomic rename writes) with group commit: the owner mutates its own
 * in-memory state, then awaits `commit()`. Every commit asked for while a write is running shares the
 * next single write, so N concurrent callers cost at most two writes, and each caller resumes only after
 * a write that includes its change has reached the file.
 */
export class JsonFile<T> {
  readonly file: string;
  readonly #db: Low<T | null>;
  readonly #snapshot: () => T;
  /** The last write queued; each write waits for the one before it. */
  #tail: Promise<void> = Promise.resolve();
  /** A queued write that has not taken its snapshot yet: new callers join it. */
  #pending: Promise<void> | null = null;
  #writes = 0;

  constructor({ file, snapshot, stringify = (data) => JSON.stringify(data) }: JsonFileOptions<T>) {
    this.file = file;
    this.#snapshot = snapshot;
    const adapter = new DataFile<T | null>(file, { parse: (text) => JSON.parse(text) as T, stringify: (data) => stringify(data as T) });
    this.#db = new Low<T | null>(adapter, null);
  }

  /** Creates the folder and reads the file; `null` when it does not exist yet. */
  async read(): Promise<T | null> {
    await mkdir(dirname(this.file), { recursive: true });
    try {
      await this.#db.read();
    } catch (error) {
      throw new Error(`Cannot read ${this.file}: ${(error as Error).message}`, { cause: error });
    }
    return this.#db.data;
  }

  /** How many writes reached the file; group commit keeps this far below the number of commits. */
  get writes(): number {
    return this.#writes;
  }

  /** Resolves once a write that took its snapshot after this call has reached the file. */
  commit(): Promise<void> {
    if (this.#pending) return this.#pending;
    const run = this.#tail.then(() => this.#write());
    this.#pending = run;
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #write(): Promise<void> {
    // Yield once so callers in the same turn of the event loop join this write.
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#pending = null;
    this.#db.data = this.#snapshot();
    await this.#db.write();
    this.#writes++;
  }
}
