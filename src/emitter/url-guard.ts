import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { InvalidCallbackUrlError } from '../protocol/errors.js';
import { classifyAddress } from './address.js';

/** The longest callback URL accepted, in characters (spec section 8). */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/** `dns.lookup`'s callback form, as `net.connect` calls it. */
export type LookupFunction = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

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
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidCallbackUrlError(`The callback URL is not an absolute URL: ${JSON.stringify(url.slice(0, 100))}.`);
  }
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

/** Refuses a host that is a literal non-public IP address; names pass (their addresses are checked at connect). */
export function checkHost(hostname: string): void {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) === 0) return;
  const cls = classifyAddress(bare);
  if (cls !== null) throw refusal(bare, cls);
}

/**
 * Wraps a DNS lookup so that every address it answers is checked before the socket connects: a name
 * that resolves to a private address is refused even if it resolved to a public one when the URL was
 * accepted (DNS rebinding). Handed to the HTTP agent as its `lookup`.
 */
export function guardLookup(lookup: LookupFunction = dnsLookup as LookupFunction): LookupFunction {
  return function guardedLookup(hostname, options, callback) {
    // Ask for every address, so none of them can be a private one picked later by happy eyeballs.
    lookup(hostname, { ...options, all: true }, (error, result) => {
      if (error) return callback(error, options.all ? [] : '');
      const addresses = typeof result === 'string' ? [{ address: result, family: isIP(result) }] : result;
      for (const { address } of addresses) {
        const cls = classifyAddress(address);
        if (cls !== null) return callback(refusal(address, cls, hostname) as unknown as NodeJS.ErrnoException, options.all ? [] : '');
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`No address for ${hostname}`), { code: 'ENOTFOUND' }), options.all ? [] : '');
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

function refusal(address: string, cls: string, hostname?: string): InvalidCallbackUrlError {
  const what = cls === 'metadata' ? 'a cloud metadata' : `a ${cls}`;
  const via = hostname && hostname !== address ? `${hostname} resolves to ${address}` : address;
  return new InvalidCallbackUrlError(`The callback URL points to ${what} address (${via}); allow it with \`allowPrivateNetworks\`.`);
}
