import type { IncomingMessage } from 'node:http';
import { BodyReadError, readBody } from '../http/read-body.js';
import { WebhookVerificationError } from '../protocol/errors.js';

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/**
 * Turns a size limit (`262144`, `'256kb'`, `'1mb'`) into bytes; throws a TypeError naming the option.
 */
export function parseLimit(limit: unknown, name = 'limit'): number {
  if (typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0) return limit;
  const match = typeof limit === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(limit) : null;
  if (match) {
    const bytes = Math.floor(Number(match[1]) * UNITS[(match[2] ?? 'b').toLowerCase()]!);
    if (bytes > 0) return bytes;
  }
  throw new TypeError(`Expected \`${name}\` to be a positive number of bytes or a size like '256kb', got ${JSON.stringify(limit)}.`);
}

export function tooLarge(limit: number): WebhookVerificationError {
  return new WebhookVerificationError('body_too_large', 413, `The body is larger than the receiver's limit of ${limit} bytes.`);
}

export const FETCH_PARSED_HINT =
  'The Request body was already read (request.json(), text() or a framework parser), so the signature cannot be checked over the raw bytes. ' +
  'Pass the untouched Request to receiver.fetch() (in Hono: c.req.raw, before any c.req.json()).';

export const PARSED_BODY_HINT =
  'The request body was already consumed by a body parser, so the signature cannot be checked over the raw bytes. ' +
  "Mount the webhook route before express.json(), or use express.raw({ type: 'application/json' }) on it.";

/** A Node request as Express leaves it: maybe with a body a parser already set. */
export type NodeRequest = IncomingMessage & { body?: unknown; rawBody?: unknown };

/**
 * A Node request's headers read off `req.rawHeaders`, as they came on the wire, with a `get(name)` like
 * the Fetch API's `Headers` (repeated fields joined with `, `, as Node does): the three webhook headers
 * are found without going through the whole `req.headers` object. (Node's server builds that object
 * anyway, to look for `Expect`, so this saves little.) A name missing from the raw list is looked up in
 * `req.headers`, so a request built by a test harness or an adapter that sets only `headers` still works.
 */
export function wireHeaders(req: IncomingMessage): { get(name: string): string | null } {
  return {
    get(name: string): string | null {
      const raw = req.rawHeaders;
      let found: string | null = null;
      if (Array.isArray(raw)) {
        for (let i = 0; i + 1 < raw.length; i += 2) {
          const key = raw[i]!;
          if (key.length !== name.length || (key !== name && key.toLowerCase() !== name)) continue;
          found = found === null ? raw[i + 1]! : `${found}, ${raw[i + 1]!}`;
        }
      }
      if (found !== null) return found;
      const value = req.headers[name];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
  };
}

/**
 * The raw body of a Node request, capped at `limit` before anything is hashed. Takes a Buffer that
 * `express.raw()` left in `req.body` or a framework left in `req.rawBody`; fails at once, never hangs,
 * when a JSON parser already consumed the stream. A body that has already arrived whole comes back at
 * once, otherwise a promise of it, which rejects with a `BodyReadError`: map that with `bodyError`.
 */
export function readNodeBody(req: NodeRequest, limit: number, headers = wireHeaders(req)): Buffer | Promise<Buffer> {
  const left = Buffer.isBuffer(req.body) ? req.body : Buffer.isBuffer(req.rawBody) ? req.rawBody : null;
  if (left) {
    if (left.length > limit) throw tooLarge(limit);
    return left;
  }
  if (typeof req.rawBody === 'string') return Buffer.from(req.rawBody, 'utf8');
  // body-parser marks a body it consumed with `_body`; Express 4's parsers also set `req.body = {}` on
  // requests they skip, with the stream untouched, so an empty object alone does not mean consumed.
  if (req.readableEnded || (req as { _body?: boolean })._body === true) {
    throw new WebhookVerificationError('body_already_parsed', 500, PARSED_BODY_HINT);
  }
  const declared = Number(headers.get('content-length') ?? Number.NaN);
  try {
    return readBody(req, limit, declared);
  } catch (error) {
    throw bodyError(error, limit);
  }
}

/**
 * The receiver's error for a body that could not be read (a `BodyReadError`); anything else as it is.
 * The adapter maps a rejected read with it too, which spares a `.catch` promise on every request.
 */
export function bodyError(error: unknown, limit: number): unknown {
  if (!(error instanceof BodyReadError)) return error;
  if (error.reason === 'too_large') return tooLarge(limit);
  // The sender went away mid-body, or the socket failed: a bad request, not a server error.
  return new WebhookVerificationError('invalid_json', 400, 'The request body could not be read completely.');
}

/** The raw body of a Fetch API request, read chunk by chunk and abandoned as soon as it passes `limit`. */
export async function readFetchBody(req: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  if (req.bodyUsed) throw new WebhookVerificationError('body_already_parsed', 500, FETCH_PARSED_HINT);
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    let step: ReadableStreamReadResult<Uint8Array>;
    try {
      step = await reader.read();
    } catch {
      // The client went away mid-body: a bad request, not a server error.
      throw new WebhookVerificationError('invalid_json', 400, 'The request body could not be read completely.');
    }
    if (step.done) break;
    size += step.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(step.value);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}
