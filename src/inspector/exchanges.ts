import type { RawHeaders } from '../relay/frames.js';
import { videoIdOf } from './video-id.js';

/** A body as the inspector keeps it: at most `maxBodyBytes` of it, with its real size. */
export interface KeptBody {
  bytes: Buffer;
  /** The size of the whole body. */
  size: number;
  /** Only the first `bytes.length` bytes were kept: the body cannot be replayed as it was. */
  truncated: boolean;
}

/** What `listen` answered the sender: the local app's reply, listen's own refusal, or why there was none. */
export interface KeptReply {
  /** `null` when no status came back (the app was down or too slow). */
  status: number | null;
  error: { code: string; detail: string } | null;
  /** listen answered itself, and the local app never saw the request. */
  refused: { code: string; detail: string } | null;
  /** The app refused it as stale and listen did not acknowledge it (see docs/relay.md). */
  stale: boolean;
  durationMs: number;
  headers: RawHeaders;
  body: KeptBody;
}

/** One request `listen` sent to the local app (or refused), and its reply: one row of the inspector. */
export interface Exchange {
  /** The inspector's own number, increasing, kept across restarts. */
  id: number;
  /** When listen got it (ms since the epoch). */
  at: number;
  /** When the relay took it; `null` for a replay made from the inspector. */
  receivedAt: number | null;
  /** The relay's sequence number; `null` for a replay made from the inspector. */
  seq: number | null;
  channel: string | null;
  method: string;
  /** The local URL it went to. */
  url: string;
  eventName: string | null;
  deliveryId: string | null;
  /**
   * The body's top-level `id` (the clip's id in a clip webhook); `undefined` until first asked for, through
   * `exchangeVideoId` (reading it from every body forwarded would be a tenth of the inspector's cost).
   */
  videoId: string | null | undefined;
  /** With `--secret`: whether its signature verified; `null` without a secret. */
  signatureValid: boolean | null;
  resigned: boolean;
  /** Caught up from the relay's buffer after (re)connecting. */
  backlog: boolean;
  /** Resent by the relay on request (`listen --replay`). */
  replay: boolean;
  /** The exchange this one replays, when made from the inspector. */
  replayOf: number | null;
  /** Sent with edits from the inspector. */
  edited: boolean;
  request: { headers: RawHeaders; body: KeptBody };
  /** `null` while the local app has not answered yet. */
  reply: KeptReply | null;
}

/** How an exchange ended, for the list's status column and its filter. */
export type Outcome = 'pending' | '2xx' | '3xx' | '4xx' | '5xx' | 'error';

export const OUTCOMES: readonly Outcome[] = ['pending', '2xx', '3xx', '4xx', '5xx', 'error'];

export function outcomeOf(exchange: Pick<Exchange, 'reply'>): Outcome {
  const reply = exchange.reply;
  if (reply === null) return 'pending';
  if (reply.status === null) return 'error';
  return `${Math.min(5, Math.max(2, Math.floor(reply.status / 100)))}xx` as Outcome;
}

/** One row of the list: everything but headers and bodies. */
export interface ExchangeSummary {
  id: number;
  at: number;
  method: string;
  url: string;
  eventName: string | null;
  deliveryId: string | null;
  videoId: string | null;
  status: number | null;
  outcome: Outcome;
  errorCode: string | null;
  refused: string | null;
  stale: boolean;
  durationMs: number | null;
  signatureValid: boolean | null;
  resigned: boolean;
  backlog: boolean;
  replay: boolean;
  replayOf: number | null;
  edited: boolean;
}

/**
 * A finished exchange as the inspector keeps it: its log line, the bytes `lineOf` made once when
 * it finished (a view into a slab shared with the lines made around it, which the log writes as they are),
 * and the few primitives the list and its filters read: a handful of live objects where an `Exchange`
 * held 20-30 (headers, bodies, the reply) for collections to copy and trace, and a line the log writes
 * without making it again. `exchangeOf` (exchange-line.ts) reads the rest back. Only with a log: the
 * book of a recorder without one keeps exchanges as they are (exchange-book.ts says why).
 */
export class ExchangeRecord {
  readonly id: number;
  readonly at: number;
  readonly method: string;
  readonly url: string;
  readonly eventName: string | null;
  readonly deliveryId: string | null;
  /** As `Exchange.videoId`: read from the line's request body when first asked for (`exchangeVideoId`). */
  videoId: string | null | undefined;
  readonly signatureValid: boolean | null;
  readonly resigned: boolean;
  readonly backlog: boolean;
  readonly replay: boolean;
  readonly replayOf: number | null;
  readonly edited: boolean;
  /** The reply's, `null` (and `durationMs` too) for a line written before its reply came. */
  readonly status: number | null;
  readonly outcome: Outcome;
  readonly errorCode: string | null;
  readonly refused: string | null;
  readonly stale: boolean;
  readonly durationMs: number | null;
  /** Its log line, newline included: what the log wrote or read, byte for byte. */
  readonly line: Buffer;

  constructor(exchange: Exchange, line: Buffer) {
    const { status, outcome, errorCode, refused, stale, durationMs } = replyFields(exchange);
    this.id = exchange.id;
    this.at = exchange.at;
    this.method = exchange.method;
    this.url = exchange.url;
    this.eventName = exchange.eventName;
    this.deliveryId = exchange.deliveryId;
    this.videoId = exchange.videoId;
    this.signatureValid = exchange.signatureValid;
    this.resigned = exchange.resigned;
    this.backlog = exchange.backlog;
    this.replay = exchange.replay;
    this.replayOf = exchange.replayOf;
    this.edited = exchange.edited;
    this.status = status;
    this.outcome = outcome;
    this.errorCode = errorCode;
    this.refused = refused;
    this.stale = stale;
    this.durationMs = durationMs;
    this.line = line;
  }
}

/** An exchange as the book holds it: one waiting for its reply as it is, a finished one as its record. */
export type HeldExchange = Exchange | ExchangeRecord;

/** What the list shows of an exchange's reply: one rule for a record and for an exchange held whole. */
function replyFields(exchange: Exchange): Pick<ExchangeSummary, 'status' | 'outcome' | 'errorCode' | 'refused' | 'stale' | 'durationMs'> {
  const { reply } = exchange;
  return {
    status: reply?.status ?? null,
    outcome: outcomeOf(exchange),
    errorCode: reply?.error?.code ?? null,
    refused: reply?.refused?.code ?? null,
    stale: reply?.stale ?? false,
    durationMs: reply?.durationMs ?? null,
  };
}

/** One row of the list: a record has its fields already; an exchange held whole has them worked out. */
export function summarize(exchange: HeldExchange): ExchangeSummary {
  const fields = exchange instanceof ExchangeRecord ? exchange : { ...exchange, ...replyFields(exchange) };
  return {
    id: fields.id,
    at: fields.at,
    method: fields.method,
    url: fields.url,
    eventName: fields.eventName,
    deliveryId: fields.deliveryId,
    videoId: exchangeVideoId(exchange),
    status: fields.status,
    outcome: fields.outcome,
    errorCode: fields.errorCode,
    refused: fields.refused,
    stale: fields.stale,
    durationMs: fields.durationMs,
    signatureValid: fields.signatureValid,
    resigned: fields.resigned,
    backlog: fields.backlog,
    replay: fields.replay,
    replayOf: fields.replayOf,
    edited: fields.edited,
  };
}

/** A body as the page reads it: its text when it is UTF-8, and its bytes as base64 always. */
export interface BodyView {
  size: number;
  truncated: boolean;
  /** The bytes as UTF-8 text, or `null` when they are not valid UTF-8 (then show `base64`). */
  text: string | null;
  base64: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function bodyView(body: KeptBody): BodyView {
  let text: string | null;
  try {
    text = utf8.decode(body.bytes);
  } catch {
    text = null;
  }
  return { size: body.size, truncated: body.truncated, text, base64: body.bytes.toString('base64') };
}

/** The detail of one exchange, as `GET /api/listen/exchanges/:id` answers it. */
export function detailOf(exchange: Exchange) {
  const { request, reply } = exchange;
  return {
    ...summarize(exchange),
    receivedAt: exchange.receivedAt,
    seq: exchange.seq,
    channel: exchange.channel,
    request: { headers: request.headers, body: bodyView(request.body) },
    reply: reply && { status: reply.status, error: reply.error, refused: reply.refused, stale: reply.stale, durationMs: reply.durationMs, headers: reply.headers, body: bodyView(reply.body) },
  };
}

/**
 * The exchange's video id, read from its kept request body the first time it is asked for (a page shows it,
 * or a restart reads the log back). A body kept truncated had its id read whole when it was recorded. A
 * record reads the body from its line alone.
 */
export function exchangeVideoId(exchange: HeldExchange): string | null {
  if (exchange.videoId === undefined) exchange.videoId = videoIdOf(exchange instanceof ExchangeRecord ? requestBodyOfLine(exchange.line) : exchange.request.body.bytes);
  return exchange.videoId;
}

const REQUEST_KEY = Buffer.from('"request":{"headers":');
const BODY_KEY = Buffer.from(',"body":{"b64":"');

/**
 * The request body kept in a log line, decoded from its base64 alone. A quote inside a JSON string is
 * escaped, so neither key can occur in one: the first `,"body":{"b64":"` after the request's headers (a
 * list of strings) opens the request body. A line of another shape is parsed whole.
 */
export function requestBodyOfLine(line: Buffer): Buffer {
  const request = line.indexOf(REQUEST_KEY);
  const body = request === -1 ? -1 : line.indexOf(BODY_KEY, request + REQUEST_KEY.length);
  const end = body === -1 ? -1 : line.indexOf(0x22, body + BODY_KEY.length);
  if (end !== -1) return Buffer.from(line.toString('latin1', body + BODY_KEY.length, end), 'base64');
  try {
    const b64 = (JSON.parse(line.toString('utf8')) as { request?: { body?: { b64?: unknown } } }).request?.body?.b64;
    return typeof b64 === 'string' ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  } catch {
    return Buffer.alloc(0);
  }
}

/** Keeps the first `max` bytes of `bytes`. */
export function keep(bytes: Buffer, max: number): KeptBody {
  return bytes.length <= max ? { bytes, size: bytes.length, truncated: false } : { bytes: Buffer.from(bytes.subarray(0, max)), size: bytes.length, truncated: true };
}
