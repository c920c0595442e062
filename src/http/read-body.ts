import type { IncomingMessage } from 'node:http';

/** Why a request body could not be read: over the limit, or the sender left (or the socket failed) mid-body. */
export class BodyReadError extends Error {
  readonly reason: 'too_large' | 'aborted';
  constructor(reason: 'too_large' | 'aborted') {
    super(reason === 'too_large' ? 'The body is larger than the limit.' : 'The request body could not be read completely.');
    this.name = 'BodyReadError';
    this.reason = reason;
  }
}

/**
 * The body of a Node request, capped at `limit` bytes: the receiver's and the relay's one reader.
 * `declared` is the request's Content-Length (`NaN` when there is none). A body that has already arrived
 * whole comes back at once, otherwise a promise of it; throws or rejects with `BodyReadError`. A
 * Content-Length over the limit fails before anything is read; the rest of a refused body stays unread.
 */
export function readBody(req: IncomingMessage, limit: number, declared: number): Buffer | Promise<Buffer> {
  if (declared > limit) throw new BodyReadError('too_large');
  if (req.destroyed) throw new BodyReadError('aborted');
  return takeArrived(req, declared) ?? afterParser(req, limit, declared);
}

/**
 * Waits one microtask and tries again. A webhook's headers and body usually come in one packet, and
 * Node's HTTP parser emits the request at the end of the headers, before it has pushed the body; the
 * microtask runs once the parser has gone through the rest of that packet.
 */
async function afterParser(req: IncomingMessage, limit: number, declared: number): Promise<Buffer> {
  await undefined;
  return takeArrived(req, declared) ?? readStream(req, limit);
}

/**
 * The whole body, when the parser has already buffered all the bytes `content-length` announced and
 * nobody else reads the stream: one `read()` instead of listeners and a promise. (The parser never
 * pushes more than that length, and flags the message complete a little later.) `null` otherwise, with
 * nothing consumed.
 */
function takeArrived(req: IncomingMessage, declared: number): Buffer | null {
  if (!(declared > 0) || req.readableFlowing !== null || req.readableLength !== declared) return null;
  const body = req.read() as Buffer;
  // Flowing, the stream still ends and closes as usual once the parser marks the message complete.
  req.resume();
  return body;
}

/**
 * Collects a Node request's body, failing as soon as it passes `limit` bytes (the rest is left unread).
 * A body that came in one chunk is returned as that chunk, without a copy. This is raw-body's job
 * narrowed to what a webhook needs: no decoding, no async-hooks wrapper, no copy of a single chunk.
 */
function readStream(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let first: Buffer | null = null;
    let more: Buffer[] | null = null;
    let size = 0;
    const settle = (error: BodyReadError | null) => {
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onAbort);
      req.removeListener('close', onAbort);
      if (error) return reject(error);
      if (more === null) return resolve(first ?? Buffer.alloc(0));
      resolve(Buffer.concat([first!, ...more], size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        return settle(new BodyReadError('too_large'));
      }
      if (first === null) first = chunk;
      else (more ??= []).push(chunk);
    };
    const onEnd = () => settle(null);
    // The sender went away mid-body, or the socket failed: a bad request, not a server error.
    const onAbort = () => settle(new BodyReadError('aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('close', onAbort);
  });
}
