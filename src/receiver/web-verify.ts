// verifyWebhook on Web Crypto, for `cliphook/web`: the same checks in the same order as verify.ts, with
// the HMAC from `crypto.subtle`, so it is async.
import { checkSignatureWeb } from '../protocol/signature-web.js';
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

// ignoreBOM keeps a BOM in the text, as Node's Buffer#toString does: both then refuse it as invalid JSON.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const decode = (bytes: Uint8Array): string => decoder.decode(bytes);

/**
 * Verifies a webhook request on Web Crypto (Workers, Deno, Bun, browsers): signature over the raw bytes,
 * delivery id, JSON shape (spec 2.12) and the replay window. Rejects with `WebhookVerificationError`
 * (a `code` and a `status`); the Node entry's `verifyWebhook` does the same synchronously. Exported by
 * `cliphook/web` as `verifyWebhook`.
 * @example
 * import { verifyWebhook } from 'cliphook/web';
 * const { deliveryId, event } = await verifyWebhook(new Uint8Array(await request.arrayBuffer()), request.headers, { secret: env.SIGNING_SECRET });
 */
export async function verifyWebhookWeb(rawBody: Uint8Array | string, headers: HeaderSource, options: VerifyOptions): Promise<VerifiedWebhook> {
  const secrets = normaliseSecrets(options.secret);
  const tolerance = checkTolerance(options.tolerance ?? 300);
  const { deliveryId, event } = await verifyWithWeb(rawBody, headers, secrets, tolerance, options.now ?? Date.now());
  return { deliveryId, event };
}

/** `verifyWebhookWeb` with options already checked: the web receiver's path. Also returns the body as text. */
export async function verifyWithWeb(
  rawBody: Uint8Array | string,
  headers: HeaderSource,
  secrets: readonly string[],
  tolerance: number | false,
  now: number,
): Promise<VerifiedRequest> {
  assertSignatureValid(await checkSignatureWeb(rawBody, signatureHeader(headers), secrets));
  return verifySigned(rawBody, headers, tolerance, now, decode);
}
