import { connect, type Socket } from 'node:net';
import type { RawHeaders } from './frames.js';
import { ReplyParser, type ParsedReply } from './reply-parser.js';

/** What a request to the local app can fail with; `code` is Node's for the same failure where it has one. */
export class LocalHttpError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'LocalHttpError';
    this.code = code;
  }
}

/** A request in flight: `abort` ends it (and its connection) with an error. */
export interface LocalExchange {
  abort(error: Error): void;
}

// What node:http refuses to send (ERR_UNESCAPED_CHARACTERS, ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR).
const PATH = /^[\u0021-\u00ff]+$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Bodies up to this are copied behind the head into one buffer: one write, and cheaper than two. */
const JOIN_BELOW = 16 * 1024;
/** An idle connection older than this is closed rather than reused: Node's servers close theirs after 5 s. */
const IDLE_MS = 4_000;

interface Connection {
  socket: Socket;
  idleSince: number;
  /** The exchange using it, or `null` while idle. */
  busy: ((error: Error | null, chunk?: Buffer, ended?: boolean) => void) | null;
}

/**
 * A lean HTTP/1.1 client for one `http:` origin, for listen's hop to the local app (node:http's
 * client, its agent and streams cost `listen` more per event than the rest of forwarding together). Keep-alive
 * connections, one request at a time each, reused newest first; the reply is read by `ReplyParser`. It sends
 * the method, target, headers and body it is given, then `Host`, `Content-Length` (for a body) and
 * `Connection: keep-alive` (unless given one), as node:http's keep-alive agent did.
 */
export class LocalHttpClient {
  readonly #host: string;
  readonly #port: number;
  /** `Host` as sent: the origin's host and port as the URL spells them. */
  readonly #hostHeader: string;
  readonly #maxReplyBytes: number;
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  #closed = false;

  constructor(origin: URL, maxReplyBytes: number) {
    this.#host = origin.hostname.replace(/^\[|\]$/g, '');
    this.#port = Number(origin.port || 80);
    this.#hostHeader = origin.host;
    this.#maxReplyBytes = maxReplyBytes;
  }

  /** Sends one request; `done` is called once, with the reply or an error. */
  request(method: string, path: string, headers: RawHeaders, body: Buffer, done: (error: Error | null, reply?: ParsedReply) => void): LocalExchange {
    let head: string;
    try {
      head = requestHead(method, path, headers, this.#hostHeader, body.length);
    } catch (error) {
      done(error as Error);
      return { abort: () => undefined };
    }
    if (this.#closed) {
      done(new LocalHttpError('ERR_CLOSED', 'the forwarder is closed'));
      return { abort: () => undefined };
    }
    const connection = this.#take();
    const parser = new ReplyParser(method === 'HEAD', this.#maxReplyBytes);
    let settled = false;
    const finish = (error: Error | null, reply?: ParsedReply) => {
      if (settled) return;
      settled = true;
      connection.busy = null;
      // A reply may come before the request is all written (an early 413, say): the rest of the body would then
      // reach the app after it, where an app that does not read it away takes it for the next request, whose
      // reply would be that one's. As node:http's agent, the connection is reused only once the request is out.
      if (error === null && reply!.reusable && connection.socket.writableLength === 0 && !this.#closed) this.#release(connection);
      else this.#drop(connection);
      done(error, reply);
    };
    connection.busy = (error, chunk, ended) => {
      if (error) return finish(error);
      try {
        const reply = ended ? parser.end() : parser.push(chunk!);
        if (reply) finish(null, reply);
      } catch (failure) {
        finish(failure as Error);
      }
    };
    const { socket } = connection;
    if (body.length < JOIN_BELOW) {
      const out = Buffer.allocUnsafe(head.length + body.length);
      out.write(head, 0, 'latin1');
      out.set(body, head.length);
      socket.write(out);
    } else {
      socket.cork();
      socket.write(Buffer.from(head, 'latin1'));
      socket.write(body);
      socket.uncork();
    }
    return { abort: (error) => finish(error) };
  }

  /** Closes every connection; requests in flight fail. */
  close(): void {
    this.#closed = true;
    for (const connection of [...this.#all]) {
      connection.busy?.(new LocalHttpError('ECONNRESET', 'socket hang up'));
      this.#drop(connection);
    }
  }

  #take(): Connection {
    const now = performance.now();
    for (let connection = this.#idle.pop(); connection; connection = this.#idle.pop()) {
      if (!connection.socket.destroyed && now - connection.idleSince < IDLE_MS) return connection;
      this.#drop(connection);
    }
    const socket = connect({ host: this.#host, port: this.#port, noDelay: true, keepAlive: true, keepAliveInitialDelay: 1_000 });
    const connection: Connection = { socket, idleSince: now, busy: null };
    this.#all.add(connection);
    socket.on('data', (chunk: Buffer) => {
      if (connection.busy) connection.busy(null, chunk);
      else this.#drop(connection); // bytes nobody asked for: the connection cannot be trusted any more
    });
    socket.on('end', () => {
      if (connection.busy) connection.busy(null, undefined, true);
      this.#drop(connection);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      connection.busy?.(new LocalHttpError(error.code ?? 'ECONNRESET', error.message));
      this.#drop(connection);
    });
    socket.on('close', () => {
      connection.busy?.(new LocalHttpError('ECONNRESET', 'socket hang up'));
      this.#drop(connection);
    });
    return connection;
  }

  #release(connection: Connection): void {
    connection.idleSince = performance.now();
    this.#idle.push(connection);
  }

  #drop(connection: Connection): void {
    if (!this.#all.delete(connection)) return;
    const at = this.#idle.indexOf(connection);
    if (at !== -1) this.#idle.splice(at, 1);
    connection.socket.destroy();
  }
}

/** `METHOD path HTTP/1.1`, the headers as given, `Host`, `Content-Length`, `Connection`; checked as node:http checks them. */
function requestHead(method: string, path: string, headers: RawHeaders, host: string, length: number): string {
  if (!TOKEN.test(method)) throw new LocalHttpError('ERR_INVALID_HTTP_TOKEN', `Method must be a valid HTTP token ["${method}"]`);
  if (!PATH.test(path)) throw new LocalHttpError('ERR_UNESCAPED_CHARACTERS', 'Request path contains unescaped characters');
  let head = `${method} ${path} HTTP/1.1\r\n`;
  let connection = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (!TOKEN.test(name)) throw new LocalHttpError('ERR_INVALID_HTTP_TOKEN', `Header name must be a valid HTTP token ["${name}"]`);
    if (!FIELD_VALUE.test(value)) throw new LocalHttpError('ERR_INVALID_CHAR', `Invalid character in header content ["${name}"]`);
    if (!connection && name.length === 10 && name.toLowerCase() === 'connection') connection = true;
    head += `${name}: ${value}\r\n`;
  }
  // An empty body's Content-Length: 0 is among the headers when, and only when, the sender sent one.
  return `${head}Host: ${host}\r\n${length > 0 ? `Content-Length: ${length}\r\n` : ''}${connection ? '' : 'Connection: keep-alive\r\n'}\r\n`;
}
