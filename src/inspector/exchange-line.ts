import type { Exchange, KeptBody, KeptReply } from './exchanges.js';

// The exchange log's line format (one JSON line per exchange, bodies base64) and its encoding into one
// buffer per write: what exchange-log.ts writes and reads back, apart from how it manages the file.

const VERSION = 1;

export interface Encoded {
  bytes: Buffer;
  /** Where each line ends in `bytes`. */
  ends: number[];
}

/**
 * The exchanges' lines as UTF-8 in one buffer, each line written as soon as it is made, and where each ends.
 * A line is garbage the moment it is in the buffer: making the batch's lines first held them all until the
 * batch was written, so every collection meanwhile copied them (issue 23: the log was most of the
 * inspector's cost per event, and most of that was the collector).
 */
export function encode(exchanges: readonly Exchange[]): Encoded {
  let out = Buffer.allocUnsafe(Math.max(16 * 1024, exchanges.length * 2048));
  const ends: number[] = [];
  let at = 0;
  for (const exchange of exchanges) {
    const line = lineOf(exchange);
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    const needed = at + line.length * 3;
    if (needed > out.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, out.length * 2));
      out.copy(grown, 0, 0, at);
      out = grown;
    }
    at += out.write(line, at);
    ends.push(at);
  }
  return { bytes: out.subarray(0, at), ends };
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
 * as `{b64,size,truncated}`. Joined by hand: copying the exchange into a new object to stringify it was
 * half the inspector's cost per event (issue 23), and a JSON.stringify call per number or flag was most
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
