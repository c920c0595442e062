import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyReadError, drainBody, readBody, type DrainTimers } from '../http/read-body.js';
import { HEADER_DELIVERY, HEADER_EVENT } from '../protocol/headers.js';
import { problem, problemHeaders, type ProblemCode, type ProblemOptions } from '../protocol/problem.js';
import type { AppendRefusal } from './channel-types.js';
import { endToEnd, rawHeader } from './headers.js';
import type { Hub } from './hub.js';
import { pathRefusal } from './path-guard.js';
import { RelayStoreError, type RelayStore } from './relay-store.js';

export interface IngressOptions {
  store: RelayStore;
  hub: Hub;
  clock: () => number;
  maxBodyBytes: number;
  retryAfterSeconds: number;
  /** For the drain bound of refused bodies. */
  scheduler: DrainTimers;
}

// A refused body is read and thrown away up to this many bytes or this long, so its sender reads our
// answer instead of a reset; past either bound the connection is cut (a stranger cannot keep us reading).
const DRAIN_MAX_BYTES = 16 * 1024 * 1024;
const DRAIN_MAX_MS = 5_000;

// A request target WHATWG URL parsing would leave as it is: no dot segments, nothing it percent-encodes or
// rewrites (`\\`, `'`, spaces, non-ASCII), no fragment. Senders' targets almost always are; the rest go
// through `new URL`, which costs a few microseconds per event.
const PLAIN_TARGET = /^(\/in\/[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_~!$&()*+,;=:@/-]*)?)(\?[A-Za-z0-9._~!$&()*+,;=:@/?%-]*)?$/;

/**
 * The pathname and search of a request target, as `new URL(target, base)` gives them.
 * @example splitTarget('/in/abc/x?y=1') // { pathname: '/in/abc/x', search: '?y=1' }
 */
export function splitTarget(target: string): { pathname: string; search: string } {
  const plain = PLAIN_TARGET.exec(target);
  // `?` alone is an empty query, as for URL.
  if (plain) return { pathname: plain[1]!, search: plain[2] === '?' ? '' : (plain[2] ?? '') };
  const url = new URL(target, 'http://relay.invalid');
  return { pathname: url.pathname, search: url.search };
}

/**
 * `/in/<channel>[/path][?query]` read from the raw request target, byte for byte: no dot segments
 * removed, no `\` turned into `/`, nothing percent-encoded, and an empty query keeps its `?`, so the
 * local app sees the target the sender signed or logged, the extra path and the query unchanged.
 * The ingress then refuses a path that could leave the channel's prefix (`pathRefusal`).
 * @example matchIngressTarget('/in/abc/a/b?') // { channelId: 'abc', path: '/a/b', query: '?' }
 */
export function matchIngressTarget(target: string): { channelId: string; path: string; query: string } | null {
  const mark = target.indexOf('?');
  const match = /^\/in\/([A-Za-z0-9_-]+)(\/.*)?$/s.exec(mark === -1 ? target : target.slice(0, mark));
  if (!match) return null;
  return { channelId: match[1]!, path: match[2] ?? '', query: mark === -1 ? '' : target.slice(mark) };
}

/** `/in/<channel>[/path]` split into its parts, or `null` for another path. */
export function matchIngress(pathname: string): { channelId: string; path: string } | null {
  const match = /^\/in\/([A-Za-z0-9_-]+)(\/.*)?$/.exec(pathname);
  return match ? { channelId: match[1]!, path: match[2] ?? '' } : null;
}

/**
 * Takes one request for a channel: any method, the raw body up to the cap. With a listener, answers with
 * the local app's reply; without one, keeps the event and answers 503 `no_listener` with Retry-After.
 * When listeners are connected but their `--events` filters all leave the event out: 202, not kept.
 * A path that could leave the channel: 400 `invalid_path`, before the body is read. A full buffer, or a
 * data file that does not take the event: 507 `relay_full` with Retry-After, and the event is not kept;
 * a Redis that cannot be reached: 503 `relay_unavailable`, not kept either.
 */
export function createIngress({ store, hub, clock, maxBodyBytes, retryAfterSeconds, scheduler }: IngressOptions) {
  // Helpers made once, not per request: no closures on the hot path.
  const refuse = async (req: IncomingMessage, res: ServerResponse, declared: number, code: ProblemCode, options: ProblemOptions) => {
    const drained = await drainBody(req, declared, { maxBytes: DRAIN_MAX_BYTES, timeoutMs: DRAIN_MAX_MS, timers: scheduler });
    sendProblem(res, code, options, true);
    if (!drained) res.once('finish', () => req.socket.destroy());
  };
  // The store could not take or keep the event: the sender retries it later (RelayStoreError's message is the detail).
  const failed = (error: unknown) => {
    if (!(error instanceof RelayStoreError)) throw error;
    return { code: error.code, options: { detail: error.message, retryAfter: retryAfterSeconds } };
  };
  return async function relayIngress(req: IncomingMessage, res: ServerResponse, target: { channelId: string; path: string }, query: string) {
    // Read once, from rawHeaders (as the sender sent it): it caps the read and decides an empty body's header.
    const contentLength = rawHeader(req.rawHeaders, 'content-length');
    const declared = Number(contentLength ?? Number.NaN);
    // Before anything is read or stored: the path must stay under the channel.
    const refusal = pathRefusal(target.path);
    if (refusal) return refuse(req, res, declared, 'invalid_path', { detail: `The path under the channel contains ${refusal}, which could leave the channel's --forward-to path.` });
    let known: boolean;
    try {
      // The file store answers at once: no promise, no turn of the microtask queue.
      const has = store.has(target.channelId);
      known = typeof has === 'boolean' ? has : await has;
    } catch (error) {
      const { code, options } = failed(error);
      return refuse(req, res, declared, code, options);
    }
    if (!known) return refuse(req, res, declared, 'not_found', { detail: 'No such channel.' });
    let body: Buffer;
    try {
      const read = readBody(req, maxBodyBytes, declared);
      body = Buffer.isBuffer(read) ? read : await read;
    } catch (error) {
      if (!(error instanceof BodyReadError)) throw error;
      if (error.reason === 'aborted') return void res.destroy(); // the sender went away mid-body: nobody to answer
      return refuse(req, res, declared, 'body_too_large', { detail: `The body is larger than ${maxBodyBytes} bytes.` });
    }
    const headers = endToEnd(req.rawHeaders);
    // The listener sets Content-Length for a body; an empty one keeps it only if the sender sent it.
    if (body.length === 0 && contentLength !== undefined) headers.push('Content-Length', '0');
    const eventName = rawHeader(headers, HEADER_EVENT) ?? null;
    const event = {
      receivedAt: clock(),
      method: req.method ?? 'GET',
      path: target.path,
      query,
      headers,
      body,
      eventName,
      deliveryId: rawHeader(headers, HEADER_DELIVERY) ?? null,
    };
    let appended;
    try {
      // The store also hears what the listeners here make of it; with Redis, it asks the other processes' too.
      appended = store.append(target.channelId, event, hub.audience(target.channelId, eventName));
      if ('then' in appended) appended = await appended;
    } catch (error) {
      const { code, options } = failed(error);
      return sendProblem(res, code, options);
    }
    switch (appended.kind) {
      case 'not_found':
        return sendProblem(res, 'not_found', { detail: 'No such channel.' });
      case 'filtered':
        // Listeners are connected and their --events filters leave this one out: keeping it unacknowledged
        // would only fill the buffer, and a 503 would make the sender retry an event nobody asked for.
        return sendFiltered(res);
      case 'full':
        // 507, not 503 no_listener: a full buffer is the relay's storage, not the listener's absence.
        return sendProblem(res, 'relay_full', { detail: FULL[appended.reason], retryAfter: retryAfterSeconds });
    }
    const { event: stored, remote } = appended;
    const outcome = await hub.deliver(target.channelId, stored, remote);
    if (outcome.kind === 'fail' || outcome.kind === 'timeout') {
      // The sender reads our 502/504 and retries with a copy of its own: keeping this one unacknowledged
      // would only fill the buffer (nothing resends it while the listener stays connected).
      try {
        (store.ack(target.channelId, stored.seq) as Promise<void> | undefined)?.catch(() => undefined);
      } catch {
        // Not acknowledged: caught up again later, which the receiver dedupes.
      }
    } else if (outcome.kind === 'gone') {
      // The 503 promises the event is kept: it must be durable before the sender reads it, or it is not kept.
      try {
        await store.keep(target.channelId, stored);
      } catch (error) {
        const { code, options } = failed(error);
        return sendProblem(res, code, options);
      }
    }
    switch (outcome.kind) {
      case 'reply': {
        const { status, headers: replyHeaders, body: bytes } = outcome.frame;
        const noBody = status === 204 || status === 304 || req.method === 'HEAD';
        const out = endToEnd(replyHeaders);
        // A HEAD reply has no body but tells the size a GET would get (RFC 9110 §9.3.2): the local app's.
        const headLength = req.method === 'HEAD' ? rawHeader(replyHeaders, 'content-length') : undefined;
        if (!noBody) out.push('content-length', String(bytes.length));
        else if (headLength !== undefined) out.push('content-length', headLength);
        res.writeHead(status, out);
        if (noBody) res.end();
        else res.end(bytes);
        return;
      }
      case 'fail':
        // A fixed sentence: the listener's detail (`connect ECONNREFUSED 127.0.0.1:3000`) describes the
        // developer's machine and stays in listen's own output.
        return sendProblem(res, outcome.frame.code, {
          detail: outcome.frame.code === 'local_timeout' ? 'The local app did not answer in time.' : 'The listener could not get a reply from the local app.',
        });
      case 'timeout':
        return sendProblem(res, 'local_timeout', { detail: 'The local app did not answer in time.' });
      case 'gone':
        return sendProblem(res, 'no_listener', {
          detail: 'No listener is connected; the event is buffered and will be delivered when one connects.',
          retryAfter: retryAfterSeconds,
        });
    }
  };
}

const FULL: Record<AppendRefusal, string> = {
  channel_events: 'The channel buffer holds as many unacknowledged events as it may.',
  channel_bytes: 'The channel buffer holds as many bytes of unacknowledged events as it may.',
  relay_bytes: 'The relay holds as many buffered bytes across channels as it may.',
};

const FILTERED = JSON.stringify({ relayed: false, reason: 'filtered_by_listener' });

/** 202: taken, and not relayed because no connected listener wants this event name. */
function sendFiltered(res: ServerResponse): void {
  res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(FILTERED) });
  res.end(FILTERED);
}

/** Writes an RFC 9457 problem; `close` ends the connection (the rest of a too-large body is not read). */
export function sendProblem(res: ServerResponse, code: ProblemCode, options: ProblemOptions, close = false): void {
  if (res.headersSent) return void res.end();
  const body = problem(code, options);
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = { ...problemHeaders(body), 'content-length': Buffer.byteLength(text) };
  if (close) headers.connection = 'close';
  res.writeHead(body.status, headers);
  res.end(text);
}
