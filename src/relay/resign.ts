import { HEADER_SIGNATURE } from '../protocol/headers.js';
import { sign } from '../protocol/signature.js';
import type { EventFrame, RawHeaders } from './frames.js';

/**
 * Re-signing, so "nothing is lost while you are offline" holds for an event buffered an hour.
 * A receiver refuses a `delivered_at` outside its replay window (5 minutes by default), so an event that
 * waited at the relay would be refused as stale once it is caught up. With the secret, the listener gives
 * such an event a fresh `delivered_at` and signature. It rewrites only the bytes of that value, keeps
 * `X-Service-Delivery` (the receiver still dedupes), and does it only for an event whose signature verified
 * and which was fresh when the relay took it: an old captured event replayed through the channel URL stays
 * stale, so the replay window keeps protecting the app.
 */

/** Fresh on arrival: `delivered_at` within this of the relay's `receivedAt` (a receiver's default window). */
export const ARRIVAL_WINDOW_MS = 300_000;
/** Re-signed once `delivered_at` is this far from the listener's clock: a caught-up event, or a skewed clock. */
export const RESIGN_AFTER_MS = 30_000;

/**
 * The body and headers to forward instead of `frame`'s, re-signed with `secret` at `now`, or `null` when
 * the event is to go as it is. The caller has checked that its signature verifies.
 */
export function resign(frame: Pick<EventFrame, 'body' | 'headers' | 'receivedAt'>, secret: string, now: number): { body: Buffer; headers: RawHeaders } | null {
  // Most events are fresh: a native search spares them the byte-by-byte scan (which a large body would feel).
  const key = frame.body.indexOf(KEY);
  if (key === -1) return null;
  // Only a key that occurs once can be read without the scan: with two, the one found may be nested (a
  // fresh nested value would spare a stale top-level one its re-signing), so the scan decides.
  const quick = key === frame.body.lastIndexOf(KEY) && frame.body.indexOf(QUICK, key) === key ? key : -1;
  if (quick !== -1) {
    const quickAt = Date.parse(frame.body.toString('latin1', quick + QUICK.length, frame.body.indexOf(QUOTE, quick + QUICK.length)));
    if (Math.abs(now - quickAt) <= RESIGN_AFTER_MS) return null;
  }
  const value = topLevelString(frame.body, 'delivered_at');
  if (value === null) return null;
  const at = Date.parse(frame.body.toString('latin1', value.start, value.end));
  if (!Number.isFinite(at) || Math.abs(frame.receivedAt - at) > ARRIVAL_WINDOW_MS || Math.abs(now - at) <= RESIGN_AFTER_MS) return null;
  const fresh = new Date(now).toISOString();
  const body = Buffer.concat([frame.body.subarray(0, value.start), Buffer.from(fresh, 'latin1'), frame.body.subarray(value.end)]);
  // What a receiver will read must be the value written: a duplicate or escaped key would make it another.
  if (readDeliveredAt(body) !== fresh) return null;
  return { body, headers: withSignature(frame.headers, sign(body, secret)) };
}

/** `body` with its top-level `delivered_at` string set to `now` (ISO 8601), only those bytes rewritten; unchanged without one. */
export function withDeliveredAt(body: Buffer, now: number): Buffer {
  const value = topLevelString(body, 'delivered_at');
  if (value === null) return body;
  return Buffer.concat([body.subarray(0, value.start), Buffer.from(new Date(now).toISOString(), 'latin1'), body.subarray(value.end)]);
}

/** `headers` with `X-Service-Signature` set to `signature`: each occurrence replaced (its spelling kept), or added. */
export function withSignature(headers: RawHeaders, signature: string): RawHeaders {
  const out = headers.slice();
  let found = false;
  for (let i = 0; i < out.length; i += 2) {
    if (out[i]!.toLowerCase() !== HEADER_SIGNATURE) continue;
    out[i + 1] = signature;
    found = true;
  }
  if (!found) out.push('X-Service-Signature', signature);
  return out;
}

function readDeliveredAt(body: Buffer): unknown {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>).delivered_at : undefined;
  } catch {
    return undefined;
  }
}

const QUOTE = 0x22;
const KEY = '"delivered_at"';
const QUICK = '"delivered_at":"';
const BACKSLASH = 0x5c;

/**
 * The byte range of the last top-level member `key` of a JSON object whose value is a string without
 * escapes (a timestamp), or `null`. Works on the bytes: JSON's structure is ASCII, and UTF-8 never puts
 * an ASCII byte inside a multi-byte character.
 */
export function topLevelString(body: Buffer, key: string): { start: number; end: number } | null {
  const wanted = Buffer.from(JSON.stringify(key), 'latin1');
  let depth = 0;
  let topIsObject = false;
  // At depth 1 of an object, a string right after `{` or `,` is a key.
  let keyNext = false;
  let found: { start: number; end: number } | null = null;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i]!;
    if (byte === QUOTE) {
      const end = stringEnd(body, i);
      if (end === -1) return null;
      if (depth === 1 && keyNext) {
        keyNext = false;
        if (body.subarray(i, end + 1).equals(wanted)) {
          let j = end + 1;
          while (isSpace(body[j])) j++;
          if (body[j] !== 0x3a) return null; // ':'
          j++;
          while (isSpace(body[j])) j++;
          // Members repeat at the reader's peril: the last one is what JSON.parse keeps.
          found = null;
          if (body[j] === QUOTE) {
            const valueEnd = stringEnd(body, j);
            if (valueEnd === -1) return null;
            if (!body.subarray(j + 1, valueEnd).includes(BACKSLASH)) found = { start: j + 1, end: valueEnd };
            i = valueEnd;
            continue;
          }
        }
      }
      i = end;
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth === 1) topIsObject = keyNext = byte === 0x7b;
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--;
    } else if (byte === 0x2c && depth === 1) {
      keyNext = topIsObject;
    }
  }
  return found;
}

/** The index of the quote that closes the string opened at `start`, or -1. */
function stringEnd(body: Buffer, start: number): number {
  for (let i = start + 1; i < body.length; i++) {
    if (body[i] === BACKSLASH) i++;
    else if (body[i] === QUOTE) return i;
  }
  return -1;
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}
