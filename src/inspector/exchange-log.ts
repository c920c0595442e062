import { createReadStream } from 'node:fs';
import { chmod, mkdir, open, rename, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { encode, parseLine, type Encoded } from './exchange-line.js';
import type { Exchange } from './exchanges.js';

/**
 * The exchanges `listen` saw, on disk beside its state file, so the inspector's list survives a restart.
 * JSON lines, one per finished exchange (bodies base64), appended as replies come: the lines of
 * `WRITE_AFTER_MS` go out in one write, on a file kept open (issue 23: opening, appending and closing the
 * file for each event cost `listen` more than forwarding it). Bounded: once the
 * file holds twice `maxEvents` lines (or twice `maxBytes`), it is rewritten with what the inspector still
 * holds (a temporary file, then a rename, so a crash leaves the old file or the new one). A torn last
 * line (a crash mid-write) is skipped on load. Mode 0600: bodies and signatures are the user's data.
 */
export interface ExchangeLogOptions {
  file: string;
  maxEvents: number;
  /** Rewrite once the file passes twice this. */
  maxBytes: number;
  /** The exchanges to keep at a rewrite, oldest first. */
  snapshot: () => Exchange[];
  /** A write failed: listen goes on, and the list is kept in memory only until a write succeeds. */
  onError: (error: Error) => void;
}

/** How long a finished exchange may wait for others before its line is written (a crash loses at most these). */
export const WRITE_AFTER_MS = 50;

export class ExchangeLog {
  readonly #options: ExchangeLogOptions;
  #lines = 0;
  #bytes = 0;
  #writing: Promise<void> = Promise.resolve();
  #failing = false;
  #ready: Promise<void> | null = null;
  /** Exchanges appended and not yet taken by a write; their lines are made by the write, so none waits as garbage. */
  #batch: Exchange[] = [];
  /** The write that takes `#batch`, while it waits. */
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** The file, open for appending; closed when a rewrite replaces it, or a write failed. */
  #handle: FileHandle | null = null;
  /** Ids the last rewrite wrote: their queued appends would write them twice. */
  #rewritten = new Set<number>();
  /** The exchange id of each line of the file (-1: unreadable) and where the line ends: what a rewrite keeps. */
  #ids: number[] = [];
  #ends: number[] = [];
  /** False after a failed write, which may have left part of a line: then only a full rewrite will do. */
  #trusted = true;

  constructor(options: ExchangeLogOptions) {
    this.#options = options;
  }

  /** Reads the file (a missing one is empty): the last `maxEvents` exchanges, oldest first. */
  async load(): Promise<Exchange[]> {
    // By id: a later line of the same exchange replaces the earlier one.
    const kept = new Map<number, Exchange>();
    let stream;
    try {
      stream = createReadStream(this.#options.file);
      await new Promise<void>((resolve, reject) => stream!.once('open', () => resolve()).once('error', reject));
    } catch (error) {
      // Nothing kept yet (or its folder cannot exist: the first write says so).
      if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return [];
      throw error;
    }
    for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
      this.#lines++;
      this.#bytes += Buffer.byteLength(line) + 1;
      const exchange = parseLine(line);
      this.#ids.push(exchange?.id ?? -1);
      this.#ends.push(this.#bytes);
      if (!exchange) continue;
      kept.delete(exchange.id);
      kept.set(exchange.id, exchange);
      // Bounded while reading too: a file of a million lines does not become a million objects.
      if (kept.size > 2 * this.#options.maxEvents) for (const id of [...kept.keys()].slice(0, kept.size - this.#options.maxEvents)) kept.delete(id);
    }
    return [...kept.values()].sort((a, b) => a.id - b.id).slice(-this.#options.maxEvents);
  }

  /**
   * Appends a finished exchange. Writes are queued, one at a time, in order; the lines that come while one
   * is on its way go out together in the next (issue 23: one append of the file per event cost `listen`
   * more than forwarding the event).
   */
  append(exchange: Exchange): void {
    this.#batch.push(exchange);
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
      const batch = this.#batch;
      this.#batch = [];
      const written = batch.filter(({ id }) => !this.#rewritten.delete(id));
      if (written.length === 0) return;
      await this.#prepare();
      const encoded = encode(written);
      const bytes = encoded.bytes.length;
      if (this.#lines + written.length > 2 * this.#options.maxEvents || this.#bytes + bytes > 2 * this.#options.maxBytes) {
        // Most often the file's tail is what the inspector still holds: copied as bytes, the new lines after it.
        if (await this.#keepTail(written, encoded)) return;
        // The exchanges are already in the snapshot (the caller holds each before appending it).
        await this.#rewrite();
        return;
      }
      try {
        this.#handle ??= await open(this.#options.file, 'a', 0o600);
        await this.#handle.write(encoded.bytes);
      } catch (error) {
        // The next write opens the file again (it may have been removed, or its disk come back).
        this.#trusted = false;
        await this.#closeHandle();
        throw error;
      }
      this.#note(written, encoded.ends, this.#bytes);
      this.#lines += written.length;
      this.#bytes += bytes;
    });
  }

  /** Records where the lines just written end (`ends`, counted from `from` bytes). */
  #note(written: Exchange[], ends: number[], from: number): void {
    for (let i = 0; i < written.length; i++) {
      this.#ids.push(written[i]!.id);
      this.#ends.push(from + ends[i]!);
    }
  }

  /**
   * The rewrite, when the exchanges still held are the file's last lines (they finish in about the order
   * they came): those bytes copied to the new file as they are, then `text`, instead of every line made
   * again (issue 23: that doubled the log's cost per event). False, having written nothing, when more than
   * 1.5 times the bounds would be kept: then the full rewrite runs.
   */
  async #keepTail(written: Exchange[], encoded: Encoded): Promise<boolean> {
    if (!this.#trusted) return false;
    const held = new Set<number>();
    for (const exchange of this.#options.snapshot()) if (exchange.reply !== null) held.add(exchange.id);
    const first = this.#ids.findIndex((id) => held.has(id));
    const from = first === -1 ? this.#bytes : first === 0 ? 0 : this.#ends[first - 1]!;
    const kept = first === -1 ? 0 : this.#ids.length - first;
    const bytes = this.#bytes - from + encoded.bytes.length;
    if (kept + written.length > 1.5 * this.#options.maxEvents || bytes > 1.5 * this.#options.maxBytes) return false;
    const temporary = `${this.#options.file}.tmp`;
    const out = await open(temporary, 'w', 0o600);
    try {
      if (from < this.#bytes) {
        const source = await open(this.#options.file, 'r');
        try {
          const chunk = Buffer.allocUnsafe(1024 * 1024);
          for (let at = from; at < this.#bytes; ) {
            const { bytesRead } = await source.read(chunk, 0, Math.min(chunk.length, this.#bytes - at), at);
            if (bytesRead === 0) break;
            await out.write(chunk, 0, bytesRead);
            at += bytesRead;
          }
        } finally {
          await source.close();
        }
      }
      await out.write(encoded.bytes);
      await out.chmod(0o600);
    } finally {
      await out.close();
    }
    // The open handle is the file being replaced: the next append opens the new one.
    await this.#closeHandle();
    await rename(temporary, this.#options.file);
    const start = first === -1 ? this.#ids.length : first;
    this.#ids = this.#ids.slice(start);
    this.#ends = this.#ends.slice(start).map((end) => end - from);
    this.#lines = this.#ids.length;
    this.#bytes = this.#ends.at(-1) ?? 0;
    this.#note(written, encoded.ends, this.#bytes);
    this.#lines += written.length;
    this.#bytes = bytes;
    return true;
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

  async #rewrite(): Promise<void> {
    const items = this.#options.snapshot().filter((exchange) => exchange.reply !== null);
    const encoded = encode(items);
    const text = encoded.bytes;
    const temporary = `${this.#options.file}.tmp`;
    await writeFile(temporary, text, { mode: 0o600 });
    await chmod(temporary, 0o600);
    // The open handle is the file being replaced: the next append opens the new one.
    await this.#closeHandle();
    await rename(temporary, this.#options.file);
    this.#lines = items.length;
    this.#bytes = text.length;
    this.#rewritten = new Set(items.map((exchange) => exchange.id));
    this.#ids = [];
    this.#ends = [];
    this.#note(items, encoded.ends, 0);
    this.#trusted = true;
  }
}
