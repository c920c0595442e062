import { createReadStream } from 'node:fs';
import { appendFile, chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { Exchange, KeptBody, KeptReply } from './exchanges.js';

/**
 * The exchanges `listen` saw, on disk beside its state file, so the inspector's list survives a restart.
 * JSON lines, one per finished exchange (bodies base64), appended as each reply comes. Bounded: once the
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

const VERSION = 1;

export class ExchangeLog {
  readonly #options: ExchangeLogOptions;
  #lines = 0;
  #bytes = 0;
  #writing: Promise<void> = Promise.resolve();
  #failing = false;
  #ready: Promise<void> | null = null;
  /** Lines appended and not yet taken by a write. */
  #batch: Array<{ id: number; line: string }> = [];
  /** Ids the last rewrite wrote: their queued appends would write them twice. */
  #rewritten = new Set<number>();

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
    this.#batch.push({ id: exchange.id, line: `${JSON.stringify(toLine(exchange))}\n` });
    // A write is queued that has not taken the batch yet: it takes this line too.
    if (this.#batch.length > 1) return;
    this.#queue(async () => {
      const batch = this.#batch;
      this.#batch = [];
      const text = batch.filter(({ id }) => !this.#rewritten.delete(id)).map(({ line }) => line);
      if (text.length === 0) return;
      await this.#prepare();
      const joined = text.join('');
      const bytes = Buffer.byteLength(joined);
      if (this.#lines + text.length > 2 * this.#options.maxEvents || this.#bytes + bytes > 2 * this.#options.maxBytes) {
        // The exchanges are already in the snapshot (the caller holds each before appending it).
        await this.#rewrite();
        return;
      }
      await appendFile(this.#options.file, joined, { mode: 0o600 });
      this.#lines += text.length;
      this.#bytes += bytes;
    });
  }

  /** Resolves once every queued write has been tried. */
  flush(): Promise<void> {
    return this.#writing;
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
    const text = items.map((exchange) => `${JSON.stringify(toLine(exchange))}\n`).join('');
    const temporary = `${this.#options.file}.tmp`;
    await writeFile(temporary, text, { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, this.#options.file);
    this.#lines = items.length;
    this.#bytes = Buffer.byteLength(text);
    this.#rewritten = new Set(items.map((exchange) => exchange.id));
  }
}

interface BodyLine {
  b64: string;
  size: number;
  truncated: boolean;
}

function toLine(exchange: Exchange) {
  const body = (kept: KeptBody): BodyLine => ({ b64: kept.bytes.toString('base64'), size: kept.size, truncated: kept.truncated });
  const { reply } = exchange;
  return {
    v: VERSION,
    ...exchange,
    request: { headers: exchange.request.headers, body: body(exchange.request.body) },
    reply: reply && { ...reply, body: body(reply.body) },
  };
}

/** One line back to an exchange, or `null` for a line that is torn or not ours. */
export function parseLine(line: string): Exchange | null {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (value?.v !== VERSION || !Number.isSafeInteger(value.id) || typeof value.at !== 'number' || typeof value.method !== 'string' || typeof value.url !== 'string') return null;
  const request = value.request as { headers?: unknown; body?: unknown } | undefined;
  const requestBody = readBody(request?.body);
  if (!isHeaders(request?.headers) || !requestBody) return null;
  let reply: KeptReply | null = null;
  if (value.reply !== null) {
    const raw = value.reply as Record<string, unknown> | undefined;
    const replyBody = readBody(raw?.body);
    if (!raw || !replyBody || !isHeaders(raw.headers) || !(raw.status === null || typeof raw.status === 'number')) return null;
    reply = {
      status: raw.status as number | null,
      error: (raw.error as KeptReply['error']) ?? null,
      refused: (raw.refused as KeptReply['refused']) ?? null,
      stale: raw.stale === true,
      durationMs: typeof raw.durationMs === 'number' ? raw.durationMs : 0,
      headers: raw.headers,
      body: replyBody,
    };
  }
  const text = (name: string) => (typeof value[name] === 'string' ? (value[name] as string) : null);
  const num = (name: string) => (typeof value[name] === 'number' ? (value[name] as number) : null);
  return {
    id: value.id as number,
    at: value.at,
    receivedAt: num('receivedAt'),
    seq: num('seq'),
    channel: text('channel'),
    method: value.method,
    url: value.url,
    eventName: text('eventName'),
    deliveryId: text('deliveryId'),
    videoId: text('videoId'),
    signatureValid: typeof value.signatureValid === 'boolean' ? value.signatureValid : null,
    resigned: value.resigned === true,
    backlog: value.backlog === true,
    replay: value.replay === true,
    replayOf: num('replayOf'),
    edited: value.edited === true,
    request: { headers: request!.headers as string[], body: requestBody },
    reply,
  };
}

function readBody(value: unknown): KeptBody | null {
  const body = value as Partial<BodyLine> | undefined;
  if (typeof body?.b64 !== 'string' || typeof body.size !== 'number') return null;
  return { bytes: Buffer.from(body.b64, 'base64'), size: body.size, truncated: body.truncated === true };
}

function isHeaders(value: unknown): value is string[] {
  return Array.isArray(value) && value.length % 2 === 0 && value.every((item) => typeof item === 'string');
}
