import type { IncomingMessage } from 'node:http';
import { BodyReadError, readBody } from '../http/read-body.js';
import { WebhookVerificationError } from '../protocol/errors.js';
import { bodyTimedOut, tooLarge } from './limit.js';

export { parseLimit, tooLarge } from './limit.js';
export { FETCH_PARSED_HINT, readFetchBody } from './fetch-body.js';

export const PARSED_BODY_HINT =
  'The request body was already consumed by a body parser, so the signature cannot be checked over the raw bytes. ' +
  "Mount the webhook route before express.json(), or use express.raw({ type: 'application/json' }) on it " +
  '(NestJS: NestFactory.create(AppModule, { rawBody: true }); Next.js Pages Router: export const config = { api: { bodyParser: false } }).';

/** What a body reader is held to: the receiver's `limit` (bytes) and `bodyTimeout` (milliseconds). */
export interface BodyLimits {
  readonly limit: number;
  readonly bodyTimeout: number;
}

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
 * The raw body of a Node request, capped at `limit` before anything is hashed and read within
 * `bodyTimeout`. Takes a Buffer that `express.raw()` left in `req.body` or a framework left in
 * `req.rawBody`; fails at once, never hangs, when a JSON parser already consumed the stream. A body that
 * has already arrived whole comes back at once, otherwise a promise of it, which rejects with a
 * `BodyReadError`: map that with `bodyError`. `parsedHint` is the `body_already_parsed` detail: how to
 * fix the mount in the adapter's framework.
 */
export function readNodeBody(req: NodeRequest, { limit, bodyTimeout }: BodyLimits, headers = wireHeaders(req), parsedHint = PARSED_BODY_HINT): Buffer | Promise<Buffer> {
  const left = Buffer.isBuffer(req.body) ? req.body : Buffer.isBuffer(req.rawBody) ? req.rawBody : null;
  if (left) {
    if (left.length > limit) throw tooLarge(limit);
    return left;
  }
  if (typeof req.rawBody === 'string') return Buffer.from(req.rawBody, 'utf8');
  // body-parser marks a body it consumed with `_body`; Express 4's parsers also set `req.body = {}` on
  // requests they skip, with the stream untouched, so an empty object alone does not mean consumed.
  if (req.readableEnded || (req as { _body?: boolean })._body === true) {
    throw new WebhookVerificationError('body_already_parsed', 500, parsedHint);
  }
  // Text chunks are not the signed bytes (and raw-body refuses such a stream): a misconfigured app, not
  // a client that went away.
  if (typeof req.readableEncoding === 'string') {
    throw new WebhookVerificationError('invalid_json', 400, 'The request stream has an encoding set (req.setEncoding), so its raw bytes cannot be read.');
  }
  const declared = Number(headers.get('content-length') ?? Number.NaN);
  try {
    return readBody(req, limit, declared, bodyTimeout);
  } catch (error) {
    throw bodyError(error, { limit, bodyTimeout });
  }
}

/**
 * The receiver's error for a body over the limit (a `BodyReadError('too_large')`) or one that did not
 * arrive within `bodyTimeout` (`'timeout'`); anything else as it is, including an aborted read, which the
 * adapters drop without a reply (nothing is wrong with the body the sender meant to send). The adapter
 * maps a rejected read with it too, which spares a `.catch` promise on every request.
 */
export function bodyError(error: unknown, { limit, bodyTimeout }: BodyLimits): unknown {
  if (!(error instanceof BodyReadError)) return error;
  return error.reason === 'too_large' ? tooLarge(limit) : error.reason === 'timeout' ? bodyTimedOut(bodyTimeout) : error;
}
