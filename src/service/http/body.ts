import type { IncomingMessage } from 'node:http';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { ServiceError } from '../contract/problems.js';

/** The largest JSON body the API takes (spec 8: "not shown"); a larger one is 413 body_too_large. */
export const MAX_JSON_BYTES = 1024 * 1024;

/**
 * The deepest nesting of arrays and objects a JSON body may have; a deeper one is 400 invalid_json. The
 * API's deepest body (a batch item's image_urls) is 4 levels; bounding it here, once, means nothing
 * downstream (the Idempotency-Key's canonical hash, validation) recurses on a depth a stranger chose
 * (issue 20 item 10: 10,000 levels overflowed the stack).
 */
export const MAX_JSON_DEPTH = 32;

/** A request's JSON body (`undefined` when it has none), or the refusal of what was sent. */
export type JsonBody = { ok: true; value: unknown } | { ok: false; error: ServiceError };

/**
 * Whether a `Content-Type` names JSON: `application/json` (with any parameters, `charset=utf-8` say) or a
 * `+json` structured syntax suffix type (RFC 6839: `application/merge-patch+json`), in any case.
 */
export function isJsonMediaType(header: string | undefined): boolean {
  const type = header?.split(';', 1)[0]!.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.-][a-z0-9!#$&^_.+-]{0,120}\+json$/.test(type);
}

/** The 415 of a body whose `Content-Type` is not JSON (issue 29 item 13). */
function notJson(header: string | undefined): ServiceError {
  const sent = header === undefined ? 'with no Content-Type' : `as ${JSON.stringify(header.slice(0, 100))}`;
  return new ServiceError('unsupported_media_type', `The body was sent ${sent}; send it as application/json (Content-Type: application/json).`);
}

/**
 * Reads and parses a JSON body with the project's one body reader: 413 body_too_large past 1 MiB, 400
 * invalid_json, 415 unsupported_media_type for bytes not declared JSON. No body at all needs no type.
 */
export async function readJsonBody(req: IncomingMessage): Promise<JsonBody> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  const type = req.headers['content-type'];
  // Issue 29 item 13: a body sent as text/plain (fetch's default for a string) or untyped is refused, before
  // anything is charged, so an integration that forgets the header fails here and not in production.
  if (declared > 0 && !isJsonMediaType(type)) {
    req.resume();
    return { ok: false, error: notJson(type) };
  }
  let bytes: Buffer;
  try {
    const read = readBody(req, MAX_JSON_BYTES, declared);
    bytes = Buffer.isBuffer(read) ? read : await read;
  } catch (error) {
    if (error instanceof BodyReadError && error.reason === 'too_large') {
      req.resume();
      return { ok: false, error: new ServiceError('body_too_large', `The body is larger than ${MAX_JSON_BYTES} bytes.`) };
    }
    return { ok: false, error: new ServiceError('invalid_json', 'The body could not be read.') };
  }
  if (bytes.length === 0) return { ok: true, value: undefined };
  if (!isJsonMediaType(type)) return { ok: false, error: notJson(type) };
  const text = bytes.toString('utf8');
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) return { ok: false, error: new ServiceError('invalid_json', `The body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`) };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, error: new ServiceError('invalid_json', 'The body is not valid JSON.') };
  }
}

/**
 * Whether JSON text opens more than `max` arrays or objects inside one another, by one pass over its
 * characters (no recursion, nothing built): brackets inside strings do not count. Text that is not JSON
 * gets an answer too; JSON.parse then refuses it.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c) i++; // a backslash escapes the next character
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      if (++depth > max) return true;
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
  return false;
}
