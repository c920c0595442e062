// The parts of the signature scheme that need no crypto: the header's form, the constant-time comparison
// of a digest with the header's hex digits, and the argument checks. Shared by the Node path
// (signature.ts, node:crypto) and the Web Crypto path (signature-web.ts), so the two cannot disagree.
import { SIGNATURE_PREFIX } from './headers.js';

/** A request body as bytes, or as a string (encoded as UTF-8). */
export type Body = Uint8Array | string;

/** What `checkSignature` found: a header of the wrong form, or of the right form and a wrong or right digest. */
export type SignatureCheck = 'malformed' | 'invalid' | 'valid';

/** Bytes in an HMAC-SHA256 digest. */
export const DIGEST_BYTES = 32;
const HEADER_LENGTH = SIGNATURE_PREFIX.length + 2 * DIGEST_BYTES;

/**
 * True when `header` has the form of one `X-Service-Signature` value: `sha256=` and 64 hex digits (either
 * case). Looks only at the header, which the sender chose, so it may return early.
 */
export function hasSignatureForm(header: unknown): header is string {
  if (typeof header !== 'string' || header.length !== HEADER_LENGTH || !header.startsWith(SIGNATURE_PREFIX)) return false;
  for (let i = SIGNATURE_PREFIX.length; i < HEADER_LENGTH; i++) {
    const code = header.charCodeAt(i);
    if (code >= 0x30 && code <= 0x39) continue; // '0'-'9'
    const lower = code | 0x20; // 'A'-'F' to 'a'-'f'; nothing else lands there
    if (lower < 0x61 || lower > 0x66) return false;
  }
  return true;
}

/**
 * Compares a 32-byte digest with the hex digits of a header that has the signature form, reading every
 * digit with no early exit and no lookup indexed by the digest. Folding the header to lowercase (| 0x20)
 * is exact once its form is checked.
 */
export function sameDigest(digest: Uint8Array, header: string): boolean {
  let diff = 0;
  for (let i = 0, at = SIGNATURE_PREFIX.length; i < DIGEST_BYTES; i++, at += 2) {
    const byte = digest[i]!;
    diff |= ((header.charCodeAt(at) | 0x20) ^ hexCode(byte >> 4)) | ((header.charCodeAt(at + 1) | 0x20) ^ hexCode(byte & 0xf));
  }
  return diff === 0;
}

/** The char code of the lowercase hex digit for `nibble` (0-15), without a branch or a table. */
function hexCode(nibble: number): number {
  // 9 - nibble is negative from 10 up: its sign bit adds the 39 that takes '0' + 10 to 'a'.
  return nibble + 0x30 + (((9 - nibble) >> 31) & 39);
}

/** Lowercase hex of `bytes`, without Buffer. */
export function toHex(bytes: Uint8Array): string {
  let hex = '';
  for (let i = 0; i < bytes.length; i++) hex += String.fromCharCode(hexCode(bytes[i]! >> 4), hexCode(bytes[i]! & 0xf));
  return hex;
}

/** True for a Uint8Array (or Buffer) from any realm: a vm context's or a worker's bytes are bytes too. */
export function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array || Object.prototype.toString.call(value) === '[object Uint8Array]';
}

/** Throws a TypeError unless `body` is the raw body: a string or bytes, not a parsed object. */
export function assertBody(body: unknown): asserts body is Body {
  if (typeof body !== 'string' && !isBytes(body)) {
    throw new TypeError(
      `Expected \`body\` to be the raw request body (Buffer, Uint8Array or string), got ${body === null ? 'null' : typeof body}: sign and verify the bytes before any JSON parsing.`,
    );
  }
}

/** Throws a TypeError unless `secret` is a non-empty string. */
export function assertSecret(secret: unknown, name = 'secret'): asserts secret is string {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError(`Expected \`${name}\` to be a non-empty string, got ${JSON.stringify(secret) ?? String(secret)}.`);
  }
}

/** Throws a TypeError unless `secrets` is a non-empty string or a non-empty array of them. */
export function assertSecrets(secrets: unknown): asserts secrets is string | readonly string[] {
  // An empty secret would make a signature anyone can compute valid: refuse it loudly.
  if (typeof secrets === 'string') assertSecret(secrets, 'secrets');
  else if (!Array.isArray(secrets) || secrets.length === 0) throw new TypeError('Expected `secrets` to be a non-empty string or a non-empty array of them.');
  else for (let i = 0; i < secrets.length; i++) assertSecret(secrets[i], 'secrets');
}
