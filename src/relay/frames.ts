/**
 * The relay's WebSocket messages: their types, their encoding and the one parser that checks them.
 * Frames that carry a body (`event`, `reply`) are binary: a 4-byte big-endian length, that many bytes
 * of JSON head, then the body bytes untouched, so the bytes the sender signed are the bytes the local
 * app reads (smee re-serialised JSON and broke HMACs: smee-client#325, #454) and no body is base64'd or
 * JSON-escaped on its way. Every other frame is a JSON text frame.
 */

/** Header lines as Node's `rawHeaders` gives them: `[name, value, name, value, …]`, repeats kept in order. */
export type RawHeaders = string[];

/** Relay → listener, once, right after the upgrade: the listener is connected. */
export interface HelloFrame {
  type: 'hello';
  channel: string;
  /** This connection's id, for logs. */
  listener: string;
  /** How often the relay pings; the listener's read deadline is derived from it. */
  pingIntervalMs: number;
}

/** Relay → listener: one request that came in at `/in/<channel>`. */
export interface EventFrame {
  type: 'event';
  /** Per-channel sequence number, from 1; the listener's reply acknowledges it. */
  seq: number;
  /** When the relay took the request, in milliseconds since the epoch. */
  receivedAt: number;
  method: string;
  /** The path after `/in/<channel>`: `''` or starting with `/`. */
  path: string;
  /** The query string: `''` or starting with `?`. */
  query: string;
  /** End-to-end request headers; hop-by-hop ones and `content-length` are dropped. */
  headers: RawHeaders;
  /** The body bytes; on the wire, the tail of the binary frame. */
  body: Buffer;
  /** True for an event caught up from the buffer after (re)connecting: nobody waits for its reply. */
  backlog: boolean;
  /** True when the listener asked for it with a `replay` frame. */
  replay: boolean;
}

/** Relay → listener: the event a `replay` frame asked for is not in the buffer. */
export interface ReplayMissingFrame {
  type: 'replay_missing';
  ref: string;
}

export type ServerFrame = HelloFrame | EventFrame | ReplayMissingFrame;

/** Listener → relay: the local app's reply to event `seq`; it also acknowledges the event. */
export interface ReplyFrame {
  type: 'reply';
  seq: number;
  status: number;
  headers: RawHeaders;
  /** The reply body bytes; on the wire, the tail of the binary frame. */
  body: Buffer;
}

/** Why a listener could not get a reply from the local app. */
export type FailCode = 'local_unreachable' | 'local_timeout';

/** Listener → relay: the local app could not be reached or did not answer in time; not an ack. */
export interface FailFrame {
  type: 'fail';
  seq: number;
  code: FailCode;
  detail: string;
}

/** Listener → relay: resend a buffered event, named by its sequence number or its `X-Service-Delivery`. */
export interface ReplayFrame {
  type: 'replay';
  ref: string;
}

export type ClientFrame = ReplyFrame | FailFrame | ReplayFrame;

/**
 * WebSocket close codes the relay and the listener use.
 * @example socket.on('close', (code) => { if (code === RELAY_CLOSE_CODES.channelGone) process.exitCode = 1; });
 */
export const CLOSE = Object.freeze({
  normal: 1000,
  goingAway: 1001,
  /** RFC 6455 §7.4.1: a message that violates the policy (malformed frame). */
  policy: 1008,
  /** RFC 6455 §7.4.1: a message too big to process. */
  tooBig: 1009,
  /** RFC 6455 §7.4.1: the peer met a condition it could not handle. */
  internalError: 1011,
  /** IANA's registry: the relay's Redis came back after an outage; reconnect and catch up. */
  serviceRestart: 1012,
  /** The token no longer matches the channel: do not reconnect. */
  invalidToken: 4001,
  /** The channel was deleted: do not reconnect. */
  channelGone: 4004,
});

/** A frame that breaks the protocol; `closeCode` is what the socket is closed with. */
export class FrameError extends Error {
  readonly closeCode: number;
  constructor(message: string, closeCode: number = CLOSE.policy) {
    super(message);
    this.name = 'FrameError';
    this.closeCode = closeCode;
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// What Node's http module accepts in a header value (it throws on anything else, so check first).
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const PATH = /^(?:\/[^\s\x00-\x1f\x7f]*)?$/;
const QUERY = /^(?:\?[^\s\x00-\x1f\x7f]*)?$/;
const MAX_HEADER_FIELDS = 500;
const MAX_TEXT = 4096;
const FAIL_CODES: readonly string[] = ['local_unreachable', 'local_timeout'];

/** Bytes of the head-length prefix of a binary frame. */
const PREFIX = 4;

/** Room a frame has besides its body: its JSON head (headers and a few numbers). */
export const MAX_HEAD_BYTES = 256 * 1024;
/** Reply body bytes every relay takes, whatever its `maxBodyBytes`. */
export const MAX_REPLY_BODY_BYTES = 1024 * 1024;

/**
 * Checks a reply the way `parseClientFrame` will check it on the relay (status, header count, names and
 * values, frame size), so a listener sends a `fail` instead of a reply that gets its socket closed 1008
 * and its event resent in a loop. `frameBytes` is the encoded frame's length. Throws `FrameError`.
 */
export function checkReply(frame: ReplyFrame, frameBytes: number, maxBytes = MAX_REPLY_BODY_BYTES + MAX_HEAD_BYTES): void {
  seq(frame.seq);
  status(frame.status);
  headers(frame.headers);
  if (frameBytes > maxBytes) throw new FrameError('frame too large', CLOSE.tooBig);
}

/** Encodes a frame for `ws.send`: a Buffer (sent binary) for `event` and `reply`, JSON text for the rest. */
export function encodeFrame(frame: ServerFrame | ClientFrame): string | Buffer {
  if (frame.type !== 'event' && frame.type !== 'reply') return JSON.stringify(frame);
  const { body } = frame;
  const json = frame.type === 'event' ? eventHead(frame) : replyHead(frame);
  const headBytes = Buffer.byteLength(json);
  const out = Buffer.allocUnsafe(PREFIX + headBytes + body.length);
  out.writeUInt32BE(headBytes, 0);
  out.write(json, PREFIX, 'utf8');
  out.set(body, PREFIX + headBytes);
  return out;
}

const json = JSON.stringify;

// An event's headers are written twice in a row, in its data file line and in its frame: the second time
// reuses the first (a cache of one, by identity).
let lastHeaders: RawHeaders | null = null;
let lastHeadersJson = '';

/** `JSON.stringify(headers)`, made once for the event being stored and sent. */
export function headersJson(headers: RawHeaders): string {
  if (headers !== lastHeaders) {
    lastHeadersJson = json(headers);
    lastHeaders = headers;
  }
  return lastHeadersJson;
}

// The heads of the two frames sent once per event, joined by hand: copying the frame without its body to
// stringify the rest costs a third more. The members are those of the types, in their order.
export function eventHead(frame: EventFrame): string {
  const { seq, receivedAt, method, path, query, headers } = frame;
  return `{"type":"event","seq":${json(seq)},"receivedAt":${json(receivedAt)},"method":${json(method)},"path":${json(path)},"query":${json(query)},"headers":${headersJson(headers)},"backlog":${frame.backlog === true},"replay":${frame.replay === true}}`;
}

function replyHead(frame: ReplyFrame): string {
  return `{"type":"reply","seq":${json(frame.seq)},"status":${json(frame.status)},"headers":${json(frame.headers)}}`;
}

/** Bytes to base64, the form the relay's data file keeps bodies in. */
export function encodeBody(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Base64 from the data file back to bytes. */
export function decodeBody(base64: string): Buffer {
  return Buffer.from(base64, 'base64');
}

/**
 * Parses and checks a frame a listener sent. Throws `FrameError` (never anything else) for bad JSON, an
 * unknown type, a type in the wrong kind of frame (binary or text) or a member of the wrong shape; a
 * larger frame than `maxBytes` is 1009.
 */
export function parseClientFrame(data: unknown, isBinary: boolean, maxBytes = Infinity): ClientFrame {
  const { value, body } = read(data, isBinary, maxBytes);
  if ((value.type === 'reply') !== (body !== null)) throw new FrameError('reply frames, and only they, are binary');
  switch (value.type) {
    case 'reply':
      return { type: 'reply', seq: seq(value.seq), status: status(value.status), headers: headers(value.headers), body: body! };
    case 'fail': {
      if (typeof value.code !== 'string' || !FAIL_CODES.includes(value.code)) throw new FrameError('fail.code is not a known code');
      return { type: 'fail', seq: seq(value.seq), code: value.code as FailCode, detail: text(value.detail, 'fail.detail') };
    }
    case 'replay':
      return { type: 'replay', ref: text(value.ref, 'replay.ref', 200) };
    default:
      throw new FrameError('unknown frame type');
  }
}

/** Parses and checks a frame the relay sent; the listener closes with the error's code on failure. */
export function parseServerFrame(data: unknown, isBinary: boolean, maxBytes = Infinity): ServerFrame {
  const { value, body } = read(data, isBinary, maxBytes);
  if ((value.type === 'event') !== (body !== null)) throw new FrameError('event frames, and only they, are binary');
  switch (value.type) {
    case 'hello':
      return {
        type: 'hello',
        channel: text(value.channel, 'hello.channel'),
        listener: text(value.listener, 'hello.listener'),
        pingIntervalMs: seq(value.pingIntervalMs),
      };
    case 'event': {
      if (typeof value.method !== 'string' || !TOKEN.test(value.method)) throw new FrameError('event.method is not a token');
      if (typeof value.path !== 'string' || !PATH.test(value.path)) throw new FrameError('event.path is not a path');
      if (typeof value.query !== 'string' || !QUERY.test(value.query)) throw new FrameError('event.query is not a query');
      if (typeof value.receivedAt !== 'number' || !Number.isFinite(value.receivedAt)) throw new FrameError('event.receivedAt is not a time');
      return {
        type: 'event',
        seq: seq(value.seq),
        receivedAt: value.receivedAt,
        method: value.method,
        path: value.path,
        query: value.query,
        headers: headers(value.headers),
        body: body!,
        backlog: value.backlog === true,
        replay: value.replay === true,
      };
    }
    case 'replay_missing':
      return { type: 'replay_missing', ref: text(value.ref, 'replay_missing.ref') };
    default:
      throw new FrameError('unknown frame type');
  }
}

/** The JSON head of a frame and, for a binary frame, its body bytes (a view, not a copy). */
function read(data: unknown, isBinary: boolean, maxBytes: number): { value: Record<string, unknown>; body: Buffer | null } {
  let bytes: Buffer;
  if (typeof data === 'string') bytes = Buffer.from(data, 'utf8');
  else if (Buffer.isBuffer(data)) bytes = data;
  else if (Array.isArray(data) && data.every((chunk) => Buffer.isBuffer(chunk))) bytes = Buffer.concat(data);
  else if (data instanceof ArrayBuffer) bytes = Buffer.from(data);
  else throw new FrameError('unreadable frame');
  if (bytes.length > maxBytes) throw new FrameError('frame too large', CLOSE.tooBig);
  if (!isBinary) return { value: readJson(bytes.toString('utf8')), body: null };
  if (bytes.length < PREFIX) throw new FrameError('binary frame shorter than its head length');
  const headEnd = PREFIX + bytes.readUInt32BE(0);
  if (headEnd > bytes.length) throw new FrameError('binary frame shorter than its head');
  return { value: readJson(bytes.toString('utf8', PREFIX, headEnd)), body: bytes.subarray(headEnd) };
}

function readJson(textData: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(textData);
  } catch {
    throw new FrameError('frame is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FrameError('frame is not an object');
  return value as Record<string, unknown>;
}

function seq(value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new FrameError('expected a positive integer');
  return value as number;
}

function status(value: unknown): number {
  // 1xx are interim responses; a final reply is 200-599 (RFC 9110 §15).
  if (!Number.isInteger(value) || (value as number) < 200 || (value as number) > 599) throw new FrameError('reply.status out of range');
  return value as number;
}

function text(value: unknown, name: string, max = MAX_TEXT): string {
  if (typeof value !== 'string' || value.length > max) throw new FrameError(`${name} is not a short string`);
  return value;
}

function headers(value: unknown): RawHeaders {
  if (!Array.isArray(value) || value.length % 2 !== 0 || value.length > MAX_HEADER_FIELDS * 2) throw new FrameError('headers is not a list of pairs');
  for (let i = 0; i < value.length; i += 2) {
    const name: unknown = value[i];
    const field: unknown = value[i + 1];
    if (typeof name !== 'string' || !TOKEN.test(name)) throw new FrameError('header name is not a token');
    if (typeof field !== 'string' || !HEADER_VALUE.test(field)) throw new FrameError('header value has forbidden characters');
  }
  return value as RawHeaders;
}
