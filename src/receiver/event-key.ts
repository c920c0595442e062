// The dedupe key of an event. X-Service-Delivery is not signed, so beside `d:<delivery id>` the receiver
// claims a key derived from the signed body: a captured request replayed under a forged delivery id
// finds it taken. Every attempt of one delivery differs only in its `delivered_at` (the emitter appends
// it to a payload serialised once), so the key hashes the body with that value left out: all attempts
// share it, and two events that differ in anything else (status, error_code, completed_at, …) do not.
import type { WebhookEvent } from '../protocol/events.js';

const MEMBER = '"delivered_at"';
/** Digest bytes kept in the key: 128 bits, 22 base64url characters. */
export const EVENT_KEY_BYTES = 16;

/**
 * `text` with the value of its `delivered_at` member removed (the quotes stay, so the cut is unambiguous).
 * The member is found from the end, where the emitter puts it, and must be a real member name (not inside
 * a string) holding exactly `deliveredAt`, the parsed value. A body where it is not found that way (the
 * value written with escapes) comes back whole: its attempts then share only the `d:` key.
 */
export function withoutDeliveredAt(text: string, deliveredAt: string): string {
  for (let at = text.lastIndexOf(MEMBER); at > 0; at = text.lastIndexOf(MEMBER, at - 1)) {
    // A quote preceded by an odd number of backslashes is escaped: this is inside a string.
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 1) continue;
    let i = skipSpace(text, at + MEMBER.length);
    if (text.charCodeAt(i) !== 0x3a /* : */) continue;
    i = skipSpace(text, i + 1);
    if (text.charCodeAt(i) !== 0x22 || !text.startsWith(deliveredAt, i + 1) || text.charCodeAt(i + 1 + deliveredAt.length) !== 0x22) continue;
    return text.slice(0, i + 1) + text.slice(i + 1 + deliveredAt.length);
  }
  return text;
}

function skipSpace(text: string, i: number): number {
  for (let code = text.charCodeAt(i); code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09; code = text.charCodeAt(++i));
  return i;
}

/** `e:<event>:<video id>:<base64url of the first 16 bytes of the SHA-256 of the body without delivered_at>`. */
export function eventKey(event: WebhookEvent, digest: Uint8Array): string {
  return `e:${event.event}:${event.id}:${base64url(digest, EVENT_KEY_BYTES)}`;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Unpadded base64url of the first `length` bytes, without Buffer or btoa (the Node and Web keys must match). */
export function base64url(bytes: Uint8Array, length = bytes.length): string {
  let out = '';
  let i = 0;
  for (; i + 2 < length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
  }
  if (length - i === 1) {
    const n = bytes[i]! << 16;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]!;
  } else if (length - i === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]!;
  }
  return out;
}
