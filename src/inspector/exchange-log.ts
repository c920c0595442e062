import { chmod, mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LineSlabs, recordOfLine, runsOf } from './exchange-line.js';
import { ExchangeRecord, type HeldExchange } from './exchanges.js';

/**
 * The exchanges `listen` saw, on disk beside its state file, so the inspector's list survives a restart.
 * JSON lines, one per finished exchange (bodies base64), appended as replies come: the lines of
 * `WRITE_AFTER_MS` go out in one write, on a file kept open (opening, appending and closing the
 * file for each event costs `listen` more than forwarding it). A line is the record's own bytes, made once
 * when its exchange finished (exchange-book.ts): the log makes none. Bounded: once the file holds twice
 * `maxEvents` lines (or twice `maxBytes`), it is rewritten with the lines the inspector still holds (a
 * temporary file, then a rename, so a crash leaves the old file or the new one); after a failed write too,
 * which may have left part of a line. A torn last line (a crash mid-write) is skipped on load. Mode 0600:
 * bodies and signatures are the user's data.
 */
export interface ExchangeLogOptions {
  file: string;
  maxEvents: number;
  /** Rewrite once the file passes twice this. */
  maxBytes: number;
  /** The exchanges to keep at a rewrite, oldest first: the finished ones are written. */
  snapshot: () => readonly HeldExchange[];
  /** A write failed: listen goes on, and the list is kept in memory only until a write succeeds. */
  onError: (error: Error) => void;
}

/** How long a finished exchange may wait for others before its line is written (a crash loses at most these). */
export const WRITE_AFTER_MS = 50;

/** Bytes read from the file at a time on load. */
const READ_BYTES = 64 * 1024;

export class ExchangeLog {
  readonly #options: ExchangeLogOptions;
  #lines = 0;
  #bytes = 0;
  #writing: Promise<void> = Promise.resolve();
  #failing = false;
  #ready: Promise<void> | null = null;
  /** Records appended and not yet taken by a write: the book holds them anyway, and their lines are made. */
  #batch: ExchangeRecord[] = [];
  /** The write that takes `#batch`, while it waits. */
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** The file, open for appending; closed when a rewrite replaces it, or a write failed. */
  #handle: FileHandle | null = null;
  /** The file may end in part of a line (a write failed) or lack lines the book holds: the next write rewrites it. */
  #redo = false;

  constructor(options: ExchangeLogOptions) {
    this.#options = options;
  }

  /**
   * Reads the file (a missing one is empty): the last `maxEvents` exchanges, oldest first, as records that
   * keep the lines' bytes as they were read.
   */
  async load(): Promise<ExchangeRecord[]> {
    let handle: FileHandle;
    try {
      handle = await open(this.#options.file, 'r');
    } catch (error) {
      // Nothing kept yet (or its folder cannot exist: the first write says so).
      if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return [];
      throw error;
    }
    // By id: a later line of the same exchange replaces the earlier one.
    const kept = new Map<number, ExchangeRecord>();
    const slabs = new LineSlabs();
    const take = (line: Buffer) => {
      this.#lines++;
      this.#bytes += line.length;
      const record = recordOfLine(line, slabs);
      if (!record) return;
      kept.delete(record.id);
      kept.set(record.id, record);
      // Bounded while reading too: a file of a million lines does not become a million records.
      if (kept.size > 2 * this.#options.maxEvents) for (const id of [...kept.keys()].slice(0, kept.size - this.#options.maxEvents)) kept.delete(id);
    };
    try {
      const chunk = Buffer.allocUnsafe(READ_BYTES);
      // The start of a line that the last read cut.
      let carry: Buffer | null = null;
      for (;;) {
        const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        let from = 0;
        for (let end = chunk.indexOf(0x0a, 0); end !== -1 && end < bytesRead; end = chunk.indexOf(0x0a, from)) {
          const line = chunk.subarray(from, end + 1);
          take(carry === null ? line : Buffer.concat([carry, line]));
          carry = null;
          from = end + 1;
        }
        if (from < bytesRead) carry = carry === null ? Buffer.from(chunk.subarray(from, bytesRead)) : Buffer.concat([carry, chunk.subarray(from, bytesRead)]);
      }
      // A last line without its newline: torn, unless it reads. Either way the next line would be glued to
      // it (and lost to the next load): the first write makes the file again instead.
      if (carry !== null) {
        take(carry);
        this.#redo = true;
      }
    } finally {
      await handle.close();
    }
    return [...kept.values()].sort((a, b) => a.id - b.id).slice(-this.#options.maxEvents);
  }

  /**
   * Appends a finished exchange's line. Writes are queued, one at a time, in order; the lines that come
   * while one is on its way go out together in the next (one append of the file per event costs
   * `listen` more than forwarding the event).
   */
  append(record: ExchangeRecord): void {
    this.#batch.push(record);
    this.#timer ??= setTimeout(() => this.#take(), WRITE_AFTER_MS).unref();
  }

  /** Writes what waits now, and resolves once every queued write has been tried. */
  flush(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#take();
    }
    return this.#writing;
  }

  /** Writes what waits, then lets go of the file. */
  async close(): Promise<void> {
    await this.flush();
    await this.#closeHandle();
  }

  /** Queues the write of the lines gathered so far. */
  #take(): void {
    this.#timer = null;
    this.#queue(async () => {
      // Empty when a rewrite (which writes what the book holds) took them.
      const written = this.#batch;
      this.#batch = [];
      if (written.length === 0) return;
      try {
        await this.#prepare();
        let bytes = 0;
        for (const record of written) bytes += record.line.length;
        if (this.#redo || this.#lines + written.length > 2 * this.#options.maxEvents || this.#bytes + bytes > 2 * this.#options.maxBytes) {
          // The records are already in the snapshot (the caller holds each before appending it).
          await this.#rewrite();
          return;
        }
        this.#handle ??= await open(this.#options.file, 'a', 0o600);
        await writeAll(this.#handle, written);
        this.#lines += written.length;
        this.#bytes += bytes;
      } catch (error) {
        // The next write opens the file again (it may have been removed, or its disk come back), and makes
        // it again of what the book holds: this batch's lines too, and no part of a line.
        this.#redo = true;
        await this.#closeHandle();
        throw error;
      }
    });
  }

  async #closeHandle(): Promise<void> {
    const handle = this.#handle;
    this.#handle = null;
    await handle?.close().catch(() => undefined);
  }

  #queue(write: () => Promise<void>): void {
    this.#writing = this.#writing.then(write).then(
      () => {
        this.#failing = false;
      },
      (error: Error) => {
        // Said once per failing stretch, not once per event.
        if (!this.#failing) this.#options.onError(error);
        this.#failing = true;
      },
    );
  }

  #prepare(): Promise<void> {
    this.#ready ??= mkdir(dirname(this.#options.file), { recursive: true }).then(() => undefined);
    return this.#ready.catch((error: unknown) => {
      this.#ready = null;
      throw error;
    });
  }

  /**
   * The file made again of the lines the book holds, oldest first: their bytes as they are (making
   * them again would double the log's cost per event), a temporary file renamed over the old one.
   */
  async #rewrite(): Promise<void> {
    const items: ExchangeRecord[] = [];
    for (const exchange of this.#options.snapshot()) if (exchange instanceof ExchangeRecord && exchange.outcome !== 'pending') items.push(exchange);
    // What waits to be appended is in the book, so in `items`: written now, and not again.
    this.#batch = [];
    let bytes = 0;
    for (const record of items) bytes += record.line.length;
    const temporary = `${this.#options.file}.tmp`;
    const out = await open(temporary, 'w', 0o600);
    try {
      await writeAll(out, items);
      await out.close();
    } catch (error) {
      await out.close().catch(() => undefined);
      throw error;
    }
    await chmod(temporary, 0o600);
    // The open handle is the file being replaced: the next append opens the new one.
    await this.#closeHandle();
    await rename(temporary, this.#options.file);
    this.#lines = items.length;
    this.#bytes = bytes;
    this.#redo = false;
  }
}

/** The records' lines, in one write: side by side in a slab (a batch's are), they are one buffer. */
async function writeAll(handle: FileHandle, records: readonly ExchangeRecord[]): Promise<void> {
  const runs = runsOf(records.map((record) => record.line));
  if (runs.length === 1) await handle.write(runs[0]!);
  else if (runs.length > 1) await handle.writev(runs);
}
