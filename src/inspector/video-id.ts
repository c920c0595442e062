// The video id the inspector's list shows: the top-level `id` of a webhook body (the clip's id), read
// without parsing the body where it can be.

/**
 * The video id of a body about to be kept: `undefined` (read when first asked for) unless it is kept
 * truncated, when only the whole body can tell.
 */
export function videoIdToKeep(body: Buffer, maxBodyBytes: number): string | null | undefined {
  return body.length > maxBodyBytes ? videoIdOf(body) : undefined;
}

/**
 * The top-level `id` of a JSON object body, as text: the clip's id in a clip webhook. When `"id"` occurs once,
 * early, as a member name of the top object (a webhook's `{"event":…,"id":…`), it is read there: parsing the
 * whole body for it would make a garbage copy of every body forwarded. Anything else is `JSON.parse`'s.
 */
export function videoIdOf(body: Buffer): string | null {
  if (body.length === 0 || body.length > 1024 * 1024 || body[0] !== 0x7b) return null;
  const quick = quickId(body);
  if (quick !== undefined) return quick;
  try {
    const id = (JSON.parse(body.toString('utf8')) as { id?: unknown }).id;
    return typeof id === 'number' || typeof id === 'string' ? String(id) : null;
  } catch {
    return null;
  }
}

const ID_KEY = Buffer.from('"id"');
const ESCAPE = Buffer.from('\\u');
/** How far into the body the walk to `"id"` goes before leaving it to JSON.parse. */
const QUICK_PREFIX = 256;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** The id read at its one early occurrence, or `undefined` to let JSON.parse decide. */
function quickId(body: Buffer): string | null | undefined {
  const at = body.indexOf(ID_KEY);
  // None, another one, a `\u` escape (which could spell one), or a body that does not end its object: JSON.parse.
  if (at === -1 || at > QUICK_PREFIX || body.indexOf(ID_KEY, at + 1) !== -1 || body.indexOf(ESCAPE) !== -1 || body[lastByte(body)] !== 0x7d) return undefined;
  // Is it a member name of the top object? Walk what comes before it.
  let depth = 0;
  let last = 0;
  for (let i = 0; i < at; i++) {
    const byte = body[i]!;
    if (byte === 0x22) {
      for (i++; i < at && body[i] !== 0x22; i++) if (body[i] === 0x5c) i++;
      if (i >= at) return undefined;
      last = 0x22;
      continue;
    }
    if (byte === 0x7b || byte === 0x5b) depth++;
    else if (byte === 0x7d || byte === 0x5d) depth--;
    if (!isSpace(byte)) last = byte;
  }
  if (depth !== 1 || (last !== 0x7b && last !== 0x2c)) return undefined;
  let j = skipSpace(body, at + ID_KEY.length);
  if (body[j] !== 0x3a) return undefined;
  j = skipSpace(body, j + 1);
  if (body[j] === 0x22) {
    let end = j + 1;
    while (end < body.length && body[end] !== 0x22) end += body[end] === 0x5c ? 2 : 1;
    if (end >= body.length) return undefined;
    const token = body.toString('utf8', j, end + 1);
    return token.includes('\\') ? undefined : token.slice(1, -1);
  }
  let end = j;
  while (end < body.length && !isSpace(body[end]) && body[end] !== 0x2c && body[end] !== 0x7d) end++;
  const token = body.toString('latin1', j, end);
  if (NUMBER.test(token)) return String(Number(token));
  // An object, array, true, false or null is not an id (and a broken value is JSON.parse's to refuse).
  return ['true', 'false', 'null'].includes(token) ? null : undefined;
}

function lastByte(body: Buffer): number {
  let i = body.length - 1;
  while (i > 0 && isSpace(body[i])) i--;
  return i;
}

function skipSpace(body: Buffer, i: number): number {
  while (isSpace(body[i])) i++;
  return i;
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}
