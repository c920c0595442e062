import { InvalidCallbackUrlError } from '../protocol/errors.js';
import { checkHost } from '../http/outbound-guard.js';
import { parseUrl } from '../http/url.js';

/** The longest callback URL accepted, in characters (spec section 8). */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/**
 * Checks a callback URL before anything is stored: https only (http too when `allowPrivateNetworks`),
 * at most 2048 characters, no credentials, and no literal private address. Host names are checked
 * again at connect time by `guardLookup`, since DNS can answer differently later.
 * @example checkCallbackUrl('https://example.com/webhooks', { allowPrivateNetworks: false })
 */
export function checkCallbackUrl(url: unknown, { allowPrivateNetworks }: { allowPrivateNetworks: boolean }): URL {
  if (typeof url !== 'string') throw new InvalidCallbackUrlError(`The callback URL must be a string, got ${typeof url}.`);
  if (url.length > MAX_CALLBACK_URL_LENGTH) {
    throw new InvalidCallbackUrlError(`The callback URL is ${url.length} characters long; the limit is ${MAX_CALLBACK_URL_LENGTH}.`);
  }
  const parsed = parseUrl(url);
  if (!parsed) throw new InvalidCallbackUrlError(`The callback URL is not an absolute URL: ${JSON.stringify(url.slice(0, 100))}.`);
  const schemes = allowPrivateNetworks ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(parsed.protocol)) {
    const allowed = allowPrivateNetworks ? 'https or http' : 'https (http only with `allowPrivateNetworks`)';
    throw new InvalidCallbackUrlError(`The callback URL must use ${allowed}, got ${parsed.protocol.slice(0, -1)}.`);
  }
  if (parsed.username || parsed.password) {
    throw new InvalidCallbackUrlError('The callback URL must not carry credentials (user:password@).');
  }
  // Parsing can lengthen it (percent-encoding, punycode), and the parsed form is what is stored.
  if (parsed.href.length > MAX_CALLBACK_URL_LENGTH) {
    throw new InvalidCallbackUrlError(`The callback URL is ${parsed.href.length} characters long once normalised; the limit is ${MAX_CALLBACK_URL_LENGTH}.`);
  }
  if (!allowPrivateNetworks) checkHost(parsed.hostname);
  return parsed;
}
