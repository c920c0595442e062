import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import { BodyReadError } from './body-error.js';

export { BodyReadError, isAborted } from './body-error.js';

/**
 * The body of a Node request, capped at `limit` bytes: the receiver's and the relay's one reader.
 * `declared` is the request's Content-Length (`NaN` when there is none). A body that has already arrived
 * whole (the usual webhook: headers and body in one packet) is taken with one `read()` and comes back at
 * once; any other is streamed through raw-body, within `timeoutMs` when given (then the stream is paused
 * and the read rejects with `BodyReadError('timeout')`; the caller answers and closes the connection).
 * Throws or rejects with `BodyReadError`. A Content-Length over the limit fails before anything is read;
 * the rest of a refused body stays unread.
 *
 * raw-body alone cost the receiver about 4% of its throughput in bench/middleware.ts (an async-hooks
 * resource, five listeners, a nextTick and a copy per body), which the common case now skips.
 */
export function readBody(req: IncomingMessage, limit: number, declared: number, timeoutMs?: number): Buffer | Promise<Buffer> {
  if (declared > limit) throw new BodyReadError('too_large');
  if (req.destroyed) throw new BodyReadError('aborted');
  return takeArrived(req, declared) ?? afterParser(req, limit, declared, timeoutMs);
}

/**
 * Waits one microtask and tries again. A webhook's headers and body usually come in one packet, and
 * Node's HTTP parser emits the request at the end of the headers, before it has pushed the body; the
 * microtask runs once the parser has gone through the rest of that packet.
 */
async function afterParser(req: IncomingMessage, limit: number, declared: number, timeoutMs: number | undefined): Promise<Buffer> {
  await undefined;
  return takeArrived(req, declared) ?? readStream(req, limit, timeoutMs);
}

/**
 * The whole body, when the parser has already buffered all the bytes `content-length` announced and
 * nobody else reads the stream: one `read()` instead of listeners and a promise. (The parser never
 * pushes more than that length, and flags the message complete a little later.) `null` otherwise, with
 * nothing consumed.
 */
function takeArrived(req: IncomingMessage, declared: number): Buffer | null {
  // With an encoding set, readableLength counts characters and read() gives a string: leave it to raw-body.
  if (!(declared > 0) || req.readableFlowing !== null || req.readableEncoding !== null || req.readableLength !== declared) return null;
  const body = req.read() as Buffer;
  // Flowing, the stream still ends and closes as usual once the parser marks the message complete.
  req.resume();
  return body;
}

/**
 * Streams the rest of the body through raw-body, with its limit, as a `BodyReadError` on failure; past
 * `timeoutMs` the stream is paused and the read rejects with `'timeout'`. The timer is cleared whichever
 * comes first; raw-body lets go of the stream once its connection closes.
 */
function readStream(req: IncomingMessage, limit: number, timeoutMs: number | undefined): Promise<Buffer> {
  const reading = getRawBody(req, { limit }).catch((error: unknown) => {
    throw new BodyReadError((error as { type?: string }).type === 'entity.too.large' ? 'too_large' : 'aborted');
  });
  if (timeoutMs === undefined) return reading;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      req.pause();
      reject(new BodyReadError('timeout'));
    }, timeoutMs);
    reading.then(
      (body) => {
        clearTimeout(timer);
        resolve(body);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Timers for `drainBody`: the relay passes its injected scheduler. */
export interface DrainTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * Reads and discards the rest of a refused request body, so the sender finishes writing and then reads
 * the answer: closing while it still writes gives it EPIPE or ECONNRESET instead of the 413, and an
 * emitter then retries a permanent failure for hours. Bounded, so a stranger cannot keep the
 * relay reading: resolves `true` once the body has ended, `false` when it goes past `maxBytes` (counted
 * from now, or announced by `declared`), takes longer than `timeoutMs`, or the sender leaves.
 */
export function drainBody(req: IncomingMessage, declared: number, { maxBytes, timeoutMs, timers }: { maxBytes: number; timeoutMs: number; timers: DrainTimers }): Promise<boolean> {
  if (req.readableEnded) return Promise.resolve(true);
  if (req.destroyed || declared > maxBytes) return Promise.resolve(false);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (ended: boolean) => {
      timers.clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onError);
      if (!ended) req.pause();
      resolve(ended);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(req.readableEnded);
    const onError = () => finish(false);
    const timer = timers.setTimeout(() => finish(false), timeoutMs);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.once('error', onError);
    req.resume();
  });
}
