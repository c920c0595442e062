import { BodyReadError } from '../http/body-error.js';
import { WebhookVerificationError } from '../protocol/errors.js';
import { bodyTimedOut, tooLarge } from './limit.js';

export const FETCH_PARSED_HINT =
  'The Request body was already read (request.json(), text() or a framework parser), so the signature cannot be checked over the raw bytes. ' +
  'Pass the untouched Request to receiver.fetch() (in Hono: c.req.raw, before any c.req.json()).';

/**
 * The raw body of a Fetch API request: read whole when its declared length is within `limit`, otherwise
 * chunk by chunk and abandoned as soon as it passes `limit`; either way within `bodyTimeout` milliseconds,
 * or refused as `body_timeout` (the stream is left unread, not cancelled: on Node, cancelling it would
 * close the connection before the answer). `header` is its Content-Length, read from `req.headers` unless
 * the caller has it cheaper (receiver.hono() on Node, from the Node request). Rejects with a
 * `BodyReadError('aborted')` when the stream fails (the client went away mid-body).
 */
export async function readFetchBody(req: Request, limit: number, bodyTimeout: number, header: string | null = req.headers.get('content-length')): Promise<Uint8Array> {
  // Only digits: a missing or empty header is no declaration (Number(null) and Number('') are 0).
  const declared = header !== null && /^\d{1,15}$/.test(header) ? Number(header) : Number.NaN;
  if (declared > limit) throw tooLarge(limit);
  if (req.bodyUsed) throw new WebhookVerificationError('body_already_parsed', 500, FETCH_PARSED_HINT);
  // A declared length within the limit is read whole, without asking for `req.body`:
  // @hono/node-server then reads the Node stream directly instead of building a Request and a web stream
  // (bench/middleware.ts). The server enforces the declared length (Node's parser, Bun, Deno,
  // Workers), so the read stays bounded; a body longer than declared is still refused after it.
  if (Number.isFinite(declared)) {
    let whole: ArrayBuffer;
    try {
      whole = await within(req.arrayBuffer(), bodyTimeout);
    } catch (error) {
      throw error === TIMED_OUT ? bodyTimedOut(bodyTimeout) : new BodyReadError('aborted');
    }
    if (whole.byteLength > limit) throw tooLarge(limit);
    return new Uint8Array(whole);
  }
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  let timedOut = false;
  // Releasing the lock rejects the pending read without cancelling the stream.
  const timer = setTimeout(() => {
    timedOut = true;
    reader.releaseLock();
  }, bodyTimeout);
  try {
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch {
        throw timedOut ? bodyTimedOut(bodyTimeout) : new BodyReadError('aborted');
      }
      if (step.done) break;
      size += step.value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(limit);
      }
      chunks.push(step.value);
    }
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

/** What `within` rejects with when its time is up. */
const TIMED_OUT = Symbol('timed out');

/** `promise`, or a rejection with `TIMED_OUT` after `ms`; the timer is cleared whichever comes first. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(TIMED_OUT), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
