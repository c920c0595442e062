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
const HEX = /^[0-9A-Fa-f]+$/;
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

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

/**
 * Reads one reply from the bytes of a connection, as they come: its head, then its body framed as RFC
 * 9112 §6.3 says (none for HEAD, 1xx, 204 and 304; chunked; Content-Length; else until the connection
 * closes). Interim 1xx replies are skipped, but 101, which ends HTTP on the connection. Bounded: a head
 * over `MAX_HEAD_BYTES`, a body over `maxBodyBytes`. `push` returns the reply once whole, else `null`.
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
    if (!status) throw new ReplyParseError('HPE_INVALID_CONSTANT', 'Parse Error: Expected HTTP/');
    const code = Number(status[2]);
    if (code >= 100 && code < 200 && code !== 101) return true;
    const headers: RawHeaders = [];
    let connection = '';
    let transfer: string | null = null;
    let length: string | null = null;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      const name = colon > 0 ? line.slice(0, colon) : '';
      if (!TOKEN.test(name)) throw new ReplyParseError('HPE_INVALID_HEADER_TOKEN', 'Parse Error: Invalid header token');
      const value = trimOws(line, colon + 1);
      if (!FIELD_VALUE.test(value)) throw new ReplyParseError('HPE_INVALID_HEADER_TOKEN', 'Parse Error: Invalid header value char');
      headers.push(name, value);
      // Only three names matter here: the others are not lowered at all.
      const lower = name.length === 10 || name.length === 14 || name.length === 17 ? name.toLowerCase() : '';
      if (lower === 'connection') connection += `,${value.toLowerCase()}`;
      else if (lower === 'transfer-encoding') transfer = transfer === null ? value : `${transfer}, ${value}`;
      else if (lower === 'content-length') {
        for (const part of value.split(',')) {
          const size = part.trim();
          if (!DIGITS.test(size) || (length !== null && size !== length)) throw new ReplyParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'Parse Error: Invalid Content-Length');
          length = size;
        }
      }
    }
    const tokens = connection.split(',').map((token) => token.trim());
    this.#keepAlive = status[1] === '1' ? !tokens.includes('close') : tokens.includes('keep-alive');
    this.#status = code;
    this.#headers = headers;
    if (this.#head || code === 101 || code === 204 || code === 304) this.#framing = { kind: 'none' };
    else if (transfer !== null) {
      // RFC 9112 §6.3: Transfer-Encoding wins over Content-Length; a body not chunked last runs until the close.
      this.#framing = /(?:^|,)\s*chunked\s*$/i.test(transfer) ? { kind: 'chunked' } : { kind: 'close' };
      if (length !== null) this.#keepAlive = false;
    } else if (length !== null) this.#framing = { kind: 'length', left: Number(length) };
    else this.#framing = { kind: 'close' };
    if (code === 101) this.#keepAlive = false;
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
        if (data.length - at > MAX_HEAD_BYTES) throw new ReplyParseError('HPE_INVALID_CHUNK_SIZE', 'Parse Error: Invalid character in chunk size');
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
        // The trailer section ends with an empty line; trailers are not forwarded (as before, with node:http).
        if (line === '') return this.#reply(at === data.length);
      } else {
        const size = line.split(';')[0]!.trim();
        if (!HEX.test(size) || size.length > 12) throw new ReplyParseError('HPE_INVALID_CHUNK_SIZE', 'Parse Error: Invalid character in chunk size');
        this.#chunkLeft = Number.parseInt(size, 16);
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
