import { isUtf8 } from 'node:buffer';
import { checkSignature } from '../protocol/signature.js';
import {
  assertSignatureValid,
  checkTolerance,
  normaliseSecrets,
  signatureHeader,
  verifySigned,
  type HeaderSource,
  type VerifiedRequest,
  type VerifiedWebhook,
  type VerifyOptions,
} from './verify-core.js';

export { checkTolerance, normaliseSecrets, readHeader } from './verify-core.js';
export type { HeaderSource, VerifiedWebhook, VerifyOptions } from './verify-core.js';

/**
 * Verifies a webhook request without any framework: signature over the raw bytes, delivery id, JSON
 * shape (spec 2.12) and the replay window. Throws `WebhookVerificationError` with a `code` and `status`.
 * (In `cliphook/web` the same function runs on Web Crypto and returns a promise.)
 * @example
 * const { deliveryId, event } = verifyWebhook(rawBody, req.headers, { secret: process.env.SIGNING_SECRET! });
 */
export function verifyWebhook(rawBody: Uint8Array | string, headers: HeaderSource, options: VerifyOptions): VerifiedWebhook {
  const secrets = normaliseSecrets(options.secret);
  const tolerance = checkTolerance(options.tolerance ?? 300);
  const { deliveryId, event } = verifyWith(rawBody, headers, secrets, tolerance, options.now ?? Date.now());
  return { deliveryId, event };
}

/** `verifyWebhook` with options already checked: the receiver's hot path. Also returns the body as text. */
export function verifyWith(
  rawBody: Uint8Array | string,
  headers: HeaderSource,
  secrets: readonly string[],
  tolerance: number | false,
  now: number,
): VerifiedRequest {
  assertSignatureValid(checkSignature(rawBody, signatureHeader(headers), secrets));
  return verifySigned(rawBody, headers, tolerance, now, utf8);
}

/** The body as text; invalid UTF-8 throws (both calls are native and cheaper than a fatal TextDecoder). */
function utf8(bytes: Uint8Array): string {
  if (!isUtf8(bytes)) throw new Error('not UTF-8');
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buffer.toString('utf8');
}
