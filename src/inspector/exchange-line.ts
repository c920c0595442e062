import { ExchangeRecord, type Exchange, type HeldExchange, type KeptBody, type KeptReply } from './exchanges.js';

// The exchange log's line format (one JSON line per exchange, bodies base64), the slabs the lines are kept
// in, and the record of an exchange that is its line: what exchange-log.ts writes and reads back, apart
// from how it manages the file.

const VERSION = 1;

/** Bytes of a slab: the lines made one after another share one, each a view of it. */
export const SLAB_BYTES = 64 * 1024;
/** A line longer than this gets a buffer of its own rather than starting a slab it would mostly fill. */
const OWN_BUFFER_BYTES = SLAB_BYTES / 4;

/**
 * Where the inspector's lines are kept, as UTF-8: slabs of `SLAB_BYTES`, filled one line after another,
 * each line a view of its slab (a buffer of its own per line would be one more allocation, and
 * the lines of a batch lie side by side, which the log writes as one range). A slab is let go once no
 * line views it: exchanges are forgotten oldest first, so slabs drain in the order they were filled.
 */
export class LineSlabs {
  #slab = Buffer.allocUnsafeSlow(0);
  #at = 0;

  /** The line of `exchange` (`lineOf`), made now and kept in a slab; the string is garbage at once. */
  line(exchange: Exchange): Buffer {
    const line = lineOf(exchange);
    let size = line.length * 3; // a UTF-16 code unit takes at most 3 bytes in UTF-8
    if (size > this.#slab.length - this.#at) {
      size = Buffer.byteLength(line);
      if (size > OWN_BUFFER_BYTES) return Buffer.from(line);
      if (size > this.#slab.length - this.#at) this.#next();
    }
    const start = this.#at;
    this.#at += this.#slab.write(line, start);
    return this.#slab.subarray(start, this.#at);
  }

  /** A copy of `bytes` (a line read back, which must hold a slab of its own no longer), in a slab. */
  copy(bytes: Buffer): Buffer {
    if (bytes.length > OWN_BUFFER_BYTES) return Buffer.from(bytes);
    if (bytes.length > this.#slab.length - this.#at) this.#next();
    const start = this.#at;
    this.#at += bytes.copy(this.#slab, start);
    return this.#slab.subarray(start, this.#at);
  }

  #next(): void {
    this.#slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    this.#at = 0;
  }
}

/**
 * The lines' bytes as the fewest buffers, for one write (or writev): lines that lie side by side in one
 * slab, as the lines of a batch do, become one view.
 */
export function runsOf(lines: readonly Buffer[]): Buffer[] {
  const runs: Buffer[] = [];
  for (let i = 0; i < lines.length; ) {
    const first = lines[i]!;
    let end = first.byteOffset + first.length;
    let j = i + 1;
    for (let next = lines[j]; next !== undefined && next.buffer === first.buffer && next.byteOffset === end; next = lines[++j]) end += next.length;
    runs.push(j === i + 1 ? first : Buffer.from(first.buffer, first.byteOffset, end - first.byteOffset));
    i = j;
  }
  return runs;
}

interface BodyLine {
  b64: string;
  size: number;
  truncated: boolean;
}

const json = JSON.stringify;
/** A number as JSON.stringify writes it (`null` for NaN and infinities), without the call. */
const num = (value: number | null): string => (value !== null && Number.isFinite(value) ? `${value}` : 'null');
const bool = (value: boolean | null): string => (value === null ? 'null' : value ? 'true' : 'false');
const text = (value: string | null): string => (value === null ? 'null' : json(value));
const obj = (value: object | null): string => (value === null ? 'null' : json(value));

/**
 * One exchange as its line (with the newline): `{"v":1,` and the members of `Exchange` in its order, bodies
 * as `{b64,size,truncated}`. Joined by hand: copying the exchange into a new object to stringify it would be
 * half the inspector's cost per event, and a JSON.stringify call per number or flag most
 * of the rest. `parseLine` reads it back.
 */
export function lineOf(exchange: Exchange): string {
  const { request, reply } = exchange;
  const head =
    `{"v":${VERSION},"id":${num(exchange.id)},"at":${num(exchange.at)},"receivedAt":${num(exchange.receivedAt)},"seq":${num(exchange.seq)},` +
    `"channel":${text(exchange.channel)},"method":${json(exchange.method)},"url":${json(exchange.url)},"eventName":${text(exchange.eventName)},` +
    `"deliveryId":${text(exchange.deliveryId)},${exchange.videoId === undefined ? '' : `"videoId":${text(exchange.videoId)},`}"signatureValid":${bool(exchange.signatureValid)},` +
    `"resigned":${bool(exchange.resigned)},"backlog":${bool(exchange.backlog)},"replay":${bool(exchange.replay)},"replayOf":${num(exchange.replayOf)},` +
    `"edited":${bool(exchange.edited)},"request":{"headers":${json(request.headers)},"body":${bodyOf(request.body)}},"reply":`;
  if (reply === null) return `${head}null}\n`;
  return (
    `${head}{"status":${num(reply.status)},"error":${obj(reply.error)},"refused":${obj(reply.refused)},"stale":${bool(reply.stale)},` +
    `"durationMs":${num(reply.durationMs)},"headers":${json(reply.headers)},"body":${bodyOf(reply.body)}}}\n`
  );
}

function bodyOf(kept: KeptBody): string {
  return `{"b64":"${kept.bytes.toString('base64')}","size":${num(kept.size)},"truncated":${bool(kept.truncated)}}`;
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
    // Lines write it only once it was read (see `exchangeVideoId`); older ones always did.
    videoId: typeof value.videoId === 'string' || value.videoId === null ? value.videoId : undefined,
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

/**
 * The exchange as it was recorded: a record's line parsed back (the page's detail, a replay: rare), with
 * the video id the record has read meanwhile; one still waiting for its reply, itself.
 */
export function exchangeOf(held: HeldExchange): Exchange {
  if (!(held instanceof ExchangeRecord)) return held;
  const exchange = parseLine(held.line.toString('utf8'));
  if (exchange === null) throw new Error(`The line of exchange ${held.id} no longer reads.`);
  if (exchange.videoId === undefined) exchange.videoId = held.videoId;
  return exchange;
}

/** A line read back from the log (newline included, or not for a last line), as a record; `null` when torn or not ours. */
export function recordOfLine(bytes: Buffer, slabs: LineSlabs): ExchangeRecord | null {
  const exchange = parseLine(bytes.toString('utf8'));
  if (exchange === null) return null;
  // Kept with its newline, so the log can write it back as it is.
  const line = bytes[bytes.length - 1] === 0x0a ? slabs.copy(bytes) : slabs.copy(Buffer.concat([bytes, NEWLINE]));
  return new ExchangeRecord(exchange, line);
}

const NEWLINE = Buffer.from('\n');
