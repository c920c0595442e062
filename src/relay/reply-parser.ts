import type { RawHeaders } from './frames.js';

/** One HTTP/1.x reply as the local app sent it: status, raw headers (in order, names as sent), body. */
export interface ParsedReply {
  status: number;
  headers: RawHeaders;
  body: Buffer;
  /** The connection may carry the next request (keep-alive, the body's end known, nothing after it). */
  reusable: boolean;
}

/** The reply breaks HTTP/1.1 (RFC 9112), or passes a bound; `code` names what, as Node's parser would. */
export class ReplyParseError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ReplyParseError';
    this.code = code;
  }
}

const CRLF2 = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Field values: no control characters but HTAB (RFC 9110 §5.5), as Node's parser checks.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS = /^\d+$/;
/** A chunk size: hex digits, then its extensions (RFC 9112 §7.1.1) or nothing; no whitespace, as Node's parser. */
const CHUNK_SIZE = /^([0-9A-Fa-f]+)(;.*)?$/s;
// A chunk extension may hold quoted strings, but no control characters but HTAB.
const CHUNK_EXTENSIONS = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Significant hex digits a chunk size may have: 2^48 bytes, well past any cap, and exact in a double. */
const MAX_CHUNK_DIGITS = 12;
/** Node's default `--max-http-header-size`. */
export const MAX_HEAD_BYTES = 16 * 1024;

/** `line` from `from`, without the spaces and tabs around it (RFC 9110 §5.5's OWS; not other whitespace). */
function trimOws(line: string, from: number): string {
  let start = from;
  let end = line.length;
  while (start < end && (line.charCodeAt(start) === 0x20 || line.charCodeAt(start) === 0x09)) start++;
  while (end > start && (line.charCodeAt(end - 1) === 0x20 || line.charCodeAt(end - 1) === 0x09)) end--;
  return line.slice(start, end);
}

/**
 * The first CR or LF in `bytes` (from `from`) that is not part of a CRLF, as the error Node's parser gives for
 * it; `null` if none. A CR at the very end may yet be followed by its LF.
 */
function bareLineEnd(bytes: Buffer, from: number): ReplyParseError | null {
  for (let at = bytes.indexOf(0x0a, from); at !== -1; at = bytes.indexOf(0x0a, at + 1)) {
    if (at === from || bytes[at - 1] !== 0x0d) return new ReplyParseError('HPE_CR_EXPECTED', 'Parse Error: Missing expected CR before LF');
  }
  for (let at = bytes.indexOf(0x0d, from); at !== -1 && at < bytes.length - 1; at = bytes.indexOf(0x0d, at + 1)) {
    if (bytes[at + 1] !== 0x0a) return new ReplyParseError('HPE_LF_EXPECTED', 'Parse Error: Missing expected LF after CR');
  }
  return null;
}

/** A line of a head, split at CRLF: a CR or LF left in it is a bare one. */
function lineError(line: string): ReplyParseError | null {
  if (line.includes('\n')) return new ReplyParseError('HPE_CR_EXPECTED', 'Parse Error: Missing expected CR before LF');
  if (line.includes('\r')) return new ReplyParseError('HPE_LF_EXPECTED', 'Parse Error: Missing expected LF after CR');
  return null;
}

/** A field line's name (RFC 9112 §5: a token right before the colon at `colon`), or an error. */
function fieldName(line: string, colon: number): string {
  const name = colon > 0 ? line.slice(0, colon) : '';
  if (!TOKEN.test(name)) throw lineError(line) ?? new ReplyParseError('HPE_INVALID_HEADER_TOKEN', 'Parse Error: Invalid header token');
  return name;
}

/** A field line's value after the colon at `colon`, without OWS around it, or an error (obs-fold included). */
function fieldValue(line: string, colon: number): string {
  const value = trimOws(line, colon + 1);
  if (!FIELD_VALUE.test(value)) throw lineError(value) ?? new ReplyParseError('HPE_INVALID_HEADER_TOKEN', 'Parse Error: Invalid header value char');
  return value;
}

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

/**
 * Reads one reply from the bytes of a connection, as they come: its head, then its body framed as RFC
 * 9112 §6.3 says (none for HEAD, 204 and 304; chunked; Content-Length; else until the connection closes).
 * Interim 1xx replies are skipped; a 101 is refused. What Node's parser refuses is refused (both
 * Content-Length and Transfer-Encoding, a repeated Content-Length, a bare CR or LF, whitespace in a chunk
 * size), at once, not at the deadline. Bounded: a head or trailer section over `MAX_HEAD_BYTES`, a body over
 * `maxBodyBytes`. `push` returns the reply once whole, else `null`.
 */
export class ReplyParser {
  readonly #head: boolean;
  readonly #maxBodyBytes: number;
  #buffer: Buffer | null = null;
  #status = 0;
  #headers: RawHeaders = [];
  #keepAlive = true;
  #framing: Framing | null = null;
  #chunks: Buffer[] = [];
  #size = 0;
  /** In a chunked body: bytes of the current chunk still to come (-1: its size line is next; -2: the trailer section). */
  #chunkLeft = -1;
  /** Bytes of the trailer section so far, bounded as a head is. */
  #trailerBytes = 0;
  /** The CRLF after a chunk's data is still to come. */
  #chunkEnd = false;

  /** `head`: the request was HEAD, so the reply has no body whatever its headers say. */
  constructor(head: boolean, maxBodyBytes: number) {
    this.#head = head;
    this.#maxBodyBytes = maxBodyBytes;
  }

  push(chunk: Buffer): ParsedReply | null {
    let data = this.#buffer ? Buffer.concat([this.#buffer, chunk]) : chunk;
    this.#buffer = null;
    while (this.#framing === null) {
      const end = data.indexOf(CRLF2);
      if (end === -1) {
        if (data.length > MAX_HEAD_BYTES) throw new ReplyParseError('HPE_HEADER_OVERFLOW', 'Header overflow');
        // A head whose lines end in a bare LF (or CR) never shows a CRLF CRLF: refused now, not at the deadline.
        const bare = bareLineEnd(data, 0);
        if (bare) throw bare;
        this.#buffer = data;
        return null;
      }
      if (end > MAX_HEAD_BYTES) throw new ReplyParseError('HPE_HEADER_OVERFLOW', 'Header overflow');
      const interim = this.#readHead(data.toString('latin1', 0, end));
      data = data.subarray(end + 4);
      if (interim) continue;
    }
    return this.#body(data);
  }

  /** The connection ended: the reply, if its body runs until the close; else an error. */
  end(): ParsedReply {
    if (this.#framing?.kind === 'close') return this.#reply(false);
    throw new ReplyParseError('ECONNRESET', 'socket hang up');
  }

  /** Reads a head; true for an interim (1xx) reply, which the final one follows. */
  #readHead(text: string): boolean {
    const lines = text.split('\r\n');
    const status = STATUS_LINE.exec(lines[0]!);
    if (!status) throw lineError(lines[0]!) ?? new ReplyParseError('HPE_INVALID_CONSTANT', 'Parse Error: Expected HTTP/');
    const code = Number(status[2]);
    const headers: RawHeaders = [];
    let connection = '';
    let transfer: string | null = null;
    let length: string | null = null;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      const name = fieldName(line, colon);
      const value = fieldValue(line, colon);
      headers.push(name, value);
      // Only three names matter here: the others are not lowered at all.
      const lower = name.length === 10 || name.length === 14 || name.length === 17 ? name.toLowerCase() : '';
      if (lower === 'connection') connection += `,${value.toLowerCase()}`;
      else if (lower === 'transfer-encoding') transfer = transfer === null ? value : `${transfer}, ${value}`;
      else if (lower === 'content-length') {
        // As Node's parser: one Content-Length, digits only. RFC 9112 §6.3 lets a recipient take repeats of one
        // value, but node:http (which this client replaced) refused them, and a refusal cannot be misread.
        if (length !== null) throw new ReplyParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'Parse Error: Duplicate Content-Length');
        if (!DIGITS.test(value)) throw new ReplyParseError('HPE_INVALID_CONTENT_LENGTH', value === '' ? 'Parse Error: Empty Content-Length' : 'Parse Error: Invalid character in Content-Length');
        length = value;
      }
    }
    // Interim replies (100 Continue, 103 Early Hints) are checked as any head, then skipped.
    if (code >= 100 && code < 200 && code !== 101) return true;
    // The request never asks for an upgrade (Upgrade is hop-by-hop, not forwarded): a 101 is not HTTP any more.
    if (code === 101) throw new ReplyParseError('HPE_UNEXPECTED_UPGRADE', 'the local app switched protocols (101) without being asked to');
    // RFC 9112 §6.3: both may be an attempt at response splitting, "ought to be handled as an error"; Node's parser refuses it.
    if (transfer !== null && length !== null) throw new ReplyParseError('HPE_INVALID_TRANSFER_ENCODING', "Parse Error: Transfer-Encoding can't be present with Content-Length");
    const tokens = connection.split(',').map((token) => token.trim());
    // Close wins over keep-alive; HTTP/1.0 keeps the connection only when asked, and never with Transfer-Encoding
    // (RFC 9112 §6.1: its framing is to be treated as faulty, the connection closed after the message).
    this.#keepAlive = !tokens.includes('close') && (status[1] === '1' || (tokens.includes('keep-alive') && transfer === null));
    this.#status = code;
    this.#headers = headers;
    if (this.#head || code === 204 || code === 304) this.#framing = { kind: 'none' };
    // A Transfer-Encoding not chunked last runs until the close (RFC 9112 §6.3).
    else if (transfer !== null) this.#framing = /(?:^|,)[ \t]*chunked[ \t]*$/i.test(transfer) ? { kind: 'chunked' } : { kind: 'close' };
    else if (length !== null) this.#framing = { kind: 'length', left: Number(length) };
    else this.#framing = { kind: 'close' };
    if (this.#framing.kind === 'length' && this.#framing.left > this.#maxBodyBytes) this.#tooLarge();
    return false;
  }

  #body(data: Buffer): ParsedReply | null {
    const framing = this.#framing!;
    switch (framing.kind) {
      case 'none':
        return this.#reply(data.length === 0);
      case 'close':
        this.#take(data);
        return null;
      case 'length': {
        const part = data.length > framing.left ? data.subarray(0, framing.left) : data;
        this.#take(part);
        framing.left -= part.length;
        return framing.left === 0 ? this.#reply(data.length === part.length) : null;
      }
      case 'chunked':
        return this.#chunked(data);
    }
  }

  #chunked(data: Buffer): ParsedReply | null {
    let at = 0;
    while (at < data.length) {
      if (this.#chunkLeft > 0) {
        const part = data.subarray(at, at + this.#chunkLeft);
        this.#take(part);
        this.#chunkLeft -= part.length;
        at += part.length;
        if (this.#chunkLeft === 0) this.#chunkEnd = true;
        continue;
      }
      const eol = data.indexOf(CRLF, at);
      if (eol === -1) {
        const trailers = this.#chunkLeft === -2;
        if (data.length - at > MAX_HEAD_BYTES || (trailers && this.#trailerBytes + data.length - at > MAX_HEAD_BYTES)) {
          throw trailers ? new ReplyParseError('HPE_HEADER_OVERFLOW', 'Header overflow') : new ReplyParseError('HPE_INVALID_CHUNK_SIZE', 'Parse Error: Chunk size line too long');
        }
        // A line ending in a bare LF (or CR) never shows its CRLF: refused now, not at the deadline.
        const bare = bareLineEnd(data, at);
        if (bare) throw bare;
        this.#buffer = data.subarray(at);
        return null;
      }
      const line = data.toString('latin1', at, eol);
      at = eol + 2;
      if (this.#chunkEnd) {
        if (line !== '') throw new ReplyParseError('HPE_STRICT', 'Parse Error: Expected CRLF after chunk');
        this.#chunkEnd = false;
        this.#chunkLeft = -1;
      } else if (this.#chunkLeft === -2) {
        // The trailer section ends with an empty line; its fields are checked as a head's, bounded as one, and
        // not forwarded (as before, with node:http).
        if (line === '') return this.#reply(at === data.length);
        this.#trailerBytes += line.length + 2;
        if (this.#trailerBytes > MAX_HEAD_BYTES) throw new ReplyParseError('HPE_HEADER_OVERFLOW', 'Header overflow');
        const colon = line.indexOf(':');
        fieldName(line, colon);
        fieldValue(line, colon);
      } else {
        this.#chunkLeft = chunkSize(line);
        if (this.#chunkLeft === 0) this.#chunkLeft = -2;
        else if (this.#size + this.#chunkLeft > this.#maxBodyBytes) this.#tooLarge();
      }
    }
    return null;
  }

  #take(part: Buffer): void {
    if (part.length === 0) return;
    this.#size += part.length;
    if (this.#size > this.#maxBodyBytes) this.#tooLarge();
    this.#chunks.push(part);
  }

  #tooLarge(): never {
    throw new ReplyParseError('TOO_LARGE', `the local reply is larger than ${this.#maxBodyBytes} bytes`);
  }

  #reply(nothingAfter: boolean): ParsedReply {
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size);
    return { status: this.#status, headers: this.#headers, body, reusable: this.#keepAlive && nothingAfter && this.#framing!.kind !== 'close' };
  }
}

/** The size a chunk's size line gives (RFC 9112 §7.1): hex in either case, leading zeros allowed, extensions ignored. */
function chunkSize(line: string): number {
  const match = CHUNK_SIZE.exec(line);
  if (!match) throw lineError(line) ?? new ReplyParseError('HPE_INVALID_CHUNK_SIZE', 'Parse Error: Invalid character in chunk size');
  if (match[2] !== undefined && !CHUNK_EXTENSIONS.test(match[2])) {
    throw lineError(match[2]) ?? new ReplyParseError('HPE_INVALID_CHUNK_EXTENSIONS', 'Parse Error: Invalid character in chunk extensions');
  }
  let digits = match[1]!;
  let zeros = 0;
  while (zeros < digits.length - 1 && digits.charCodeAt(zeros) === 0x30) zeros++;
  if (zeros > 0) digits = digits.slice(zeros);
  if (digits.length > MAX_CHUNK_DIGITS) throw new ReplyParseError('HPE_INVALID_CHUNK_SIZE', 'Parse Error: Chunk size overflow');
  return Number.parseInt(digits, 16);
}
