import https from 'node:https';
import type { EventFrame, FailCode, RawHeaders } from './frames.js';
import { endToEnd, rawHeader } from './headers.js';
import { realScheduler, type Scheduler } from './heartbeat.js';
import { LocalHttpClient } from './local-http.js';
import { ReplyParseError, type ParsedReply } from './reply-parser.js';

/** The local app's reply to one forwarded event: what the parser read, without its connection's reuse. */
export type LocalReply = Omit<ParsedReply, 'reusable'>;

/** The local app could not be reached or did not answer in time. */
export class ForwardError extends Error {
  readonly code: FailCode;
  constructor(code: FailCode, message: string) {
    super(message);
    this.name = 'ForwardError';
    this.code = code;
  }
}

/**
 * The request target on the local app: `forwardTo`'s path and query plus the event's extra path and
 * query, joined as strings. URL setters would re-normalise what the relay kept byte for byte (dot
 * segments, `\`, percent-encoding of `{}'`, the `?` of an empty query).
 * @example targetPath(new URL('http://localhost:3000/hooks?a=1'), { path: '/x/../y', query: '?b' }) // '/hooks/x/../y?a=1&b'
 */
export function targetPath(forwardTo: URL, event: Pick<EventFrame, 'path' | 'query'>): string {
  const path = event.path ? forwardTo.pathname.replace(/\/+$/, '') + event.path : forwardTo.pathname;
  if (!event.query) return path + forwardTo.search;
  if (!forwardTo.search) return path + event.query;
  return event.query === '?' ? path + forwardTo.search : `${path}${forwardTo.search}&${event.query.slice(1)}`;
}

/** The local URL an event goes to, for display: `forwardTo`'s origin and `targetPath`. */
export function targetUrl(forwardTo: URL, event: Pick<EventFrame, 'path' | 'query'>): { href: string } {
  return { href: forwardTo.origin + targetPath(forwardTo, event) };
}

export interface Forwarder {
  forward(event: EventFrame): Promise<LocalReply>;
  close(): void;
}

/**
 * Sends events to the local app as the relay received them: same method, body bytes and end-to-end
 * headers in order (raw header arrays keep repeats and case), with `Host` and `Content-Length` set
 * for this hop. Keep-alive, so a burst does not open a connection per event.
 */
export function createForwarder(forwardTo: URL, timeoutMs: number, maxReplyBytes: number, scheduler: Scheduler = realScheduler): Forwarder {
  return forwardTo.protocol === 'https:' ? httpsForwarder(forwardTo, timeoutMs, maxReplyBytes, scheduler) : httpForwarder(forwardTo, timeoutMs, maxReplyBytes, scheduler);
}

/** `http:` (the local app, almost always): `LocalHttpClient`, a third of node:http's CPU per request. */
function httpForwarder(forwardTo: URL, timeoutMs: number, maxReplyBytes: number, scheduler: Scheduler): Forwarder {
  const client = new LocalHttpClient(forwardTo, maxReplyBytes);
  const plainPath = forwardTo.pathname + forwardTo.search;
  return {
    close: () => client.close(),
    forward(event) {
      const path = event.path || event.query ? targetPath(forwardTo, event) : plainPath;
      return new Promise<LocalReply>((resolve, reject) => {
        let settled = false;
        let timer: unknown = null;
        const exchange = client.request(event.method, path, event.headers, event.body, (error, reply) => {
          settled = true;
          if (timer !== null) scheduler.clearTimeout(timer);
          if (error) return reject(error instanceof ReplyParseError && error.code === 'TOO_LARGE' ? new ForwardError('local_unreachable', error.message) : asForwardError(error));
          const replyHeaders = endToEnd(reply!.headers);
          // A HEAD reply's Content-Length is the size of the GET body: the relay passes it on.
          const length = event.method === 'HEAD' ? rawHeader(reply!.headers, 'content-length') : undefined;
          if (length !== undefined) replyHeaders.push('Content-Length', length);
          resolve({ status: reply!.status, headers: replyHeaders, body: reply!.body });
        });
        // The deadline covers the whole exchange (not only socket silence) and runs on the injectable scheduler.
        if (!settled) timer = scheduler.setTimeout(() => exchange.abort(new ForwardError('local_timeout', `no reply within ${timeoutMs} ms`)), timeoutMs);
      });
    },
  };
}

/** `https:`: node:https, with its certificate checks and TLS session reuse. */
function httpsForwarder(forwardTo: URL, timeoutMs: number, maxReplyBytes: number, scheduler: Scheduler): Forwarder {
  // No Nagle delay on the local hop: a reply waits on nothing but the app.
  const agent = new https.Agent({ keepAlive: true, noDelay: true });
  const request = https.request;
  // Most events have no extra path or query: their target is parsed once, not per event.
  const plain = { hostname: forwardTo.hostname.replace(/^\[|\]$/g, ''), port: forwardTo.port, path: forwardTo.pathname + forwardTo.search, host: forwardTo.host };
  return {
    close: () => agent.destroy(),
    forward(event) {
      const { body } = event;
      const where = event.path || event.query ? { ...plain, path: targetPath(forwardTo, event) } : plain;
      const headers = [...event.headers, 'Host', where.host];
      // An empty body's Content-Length: 0 is in the event's headers when, and only when, the sender sent one.
      if (body.length > 0) headers.push('Content-Length', String(body.length));
      return new Promise<LocalReply>((resolve, reject) => {
        const { hostname, port, path } = where;
        let settled = false;
        let timer: unknown;
        const settle = <T>(finish: (value: T) => void) => (value: T) => {
          if (settled) return;
          settled = true;
          scheduler.clearTimeout(timer);
          finish(value);
        };
        const done = settle(resolve);
        const fail = settle(reject);
        let req: ReturnType<typeof request>;
        try {
          req = request({ hostname, port, path, method: event.method, headers, agent }, (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (chunk: Buffer) => {
              if (settled) return;
              size += chunk.length;
              if (size > maxReplyBytes) {
                // Settle now: a destroyed response may still emit 'end', which must not pass for a whole reply.
                fail(new ForwardError('local_unreachable', `the local reply is larger than ${maxReplyBytes} bytes`));
                req.destroy();
                return;
              }
              chunks.push(chunk);
            });
            res.once('end', () => {
              if (settled) return;
              const replyHeaders = endToEnd(res.rawHeaders);
              // A HEAD reply's Content-Length is the size of the GET body: the relay passes it on.
              const length = event.method === 'HEAD' ? res.headers['content-length'] : undefined;
              if (length !== undefined) replyHeaders.push('Content-Length', length);
              done({ status: res.statusCode ?? 502, headers: replyHeaders, body: Buffer.concat(chunks, size) });
            });
            res.on('error', (error) => fail(asForwardError(error)));
          });
        } catch (error) {
          // node:http refuses some targets at once (a path with characters above U+00FF, say).
          return fail(asForwardError(error as Error));
        }
        // The deadline covers the whole exchange (not only socket silence) and runs on the injectable scheduler.
        timer = scheduler.setTimeout(() => req.destroy(new ForwardError('local_timeout', `no reply within ${timeoutMs} ms`)), timeoutMs);
        req.on('error', (error) => fail(asForwardError(error)));
        req.end(body);
      });
    },
  };
}

function asForwardError(error: Error): ForwardError {
  if (error instanceof ForwardError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new ForwardError('local_unreachable', code ? `${code}: ${error.message}` : error.message);
}
