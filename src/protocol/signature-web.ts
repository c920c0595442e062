// The signature scheme on Web Crypto (`crypto.subtle`), for runtimes without node:crypto: Cloudflare
// Workers, Deno, Bun, browsers. Same bytes in, same header out as signature.ts; it is async because
// `crypto.subtle` is.
import { SIGNATURE_PREFIX } from './headers.js';
import { assertBody, assertSecret, assertSecrets, hasSignatureForm, sameDigest, toHex, type Body, type SignatureCheck } from './signature-form.js';

const encoder = new TextEncoder();

// Importing a key costs as much as the HMAC itself for a webhook-sized body: keep the last few.
const keyCache = new Map<string, Promise<CryptoKey>>();
const KEY_CACHE_MAX = 64;

function keyFor(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret);
  if (key) return key;
  // The HMAC key is the secret string's UTF-8 bytes (a key longer than a block is hashed by HMAC itself).
  key = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  // A failed import must not stay cached.
  key.catch(() => keyCache.delete(secret));
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value!);
  keyCache.set(secret, key);
  return key;
}

/** The raw 32-byte HMAC-SHA256 of `body` keyed with the UTF-8 bytes of `secret`, on Web Crypto. */
export async function hmacWeb(body: Body, secret: string): Promise<Uint8Array> {
  const data = typeof body === 'string' ? encoder.encode(body) : body;
  return new Uint8Array(await crypto.subtle.sign('HMAC', await keyFor(secret), data as Uint8Array<ArrayBuffer>));
}

/**
 * Signs a body the way the service does, on Web Crypto: `sha256=` and the lowercase hex HMAC-SHA256.
 * Exported by `cliphook/web` as `sign`.
 * @example
 * import { sign } from 'cliphook/web';
 * await sign('{"event":"video.completed"}', 'whsec_test') // 'sha256=5f…', as the Node entry's sign()
 */
export async function signWeb(body: Body, secret: string): Promise<string> {
  assertBody(body);
  assertSecret(secret);
  return SIGNATURE_PREFIX + toHex(await hmacWeb(body, secret));
}

/**
 * `checkSignature` on Web Crypto: every secret's digest is computed, then each is compared with every
 * hex digit of the header (no early exit), so the time taken tells neither how much matched nor which
 * secret did.
 */
export async function checkSignatureWeb(body: Body, header: unknown, secrets: string | readonly string[]): Promise<SignatureCheck> {
  if (!hasSignatureForm(header)) return 'malformed';
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  const digests = await Promise.all(list.map((secret) => hmacWeb(body, secret)));
  let ok = false;
  for (const digest of digests) if (sameDigest(digest, header)) ok = true;
  return ok ? 'valid' : 'invalid';
}

/**
 * `verifySignature` on Web Crypto: checks `header` against the HMAC of `body` under each secret
 * (`[newSecret, oldSecret]` during a rotation). Resolves false for a malformed header. Exported by
 * `cliphook/web` as `verifySignature`.
 * @example
 * import { verifySignature } from 'cliphook/web';
 * await verifySignature(rawBody, request.headers.get('x-service-signature'), ['whsec_new', 'whsec_old'])
 */
export async function verifySignatureWeb(body: Body, header: unknown, secrets: string | readonly string[]): Promise<boolean> {
  assertBody(body);
  assertSecrets(secrets);
  return (await checkSignatureWeb(body, header, secrets)) === 'valid';
}
