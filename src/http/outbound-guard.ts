import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { InvalidCallbackUrlError } from '../protocol/errors.js';
import { classifyAddress } from './address.js';

// The outbound address guard: the emitter's webhooks and the service's own fetches
// (client metadata documents, jwks_uri, image URLs) connect only to public addresses through it.

/** `dns.lookup`'s callback form, as `net.connect` calls it. */
export type LookupFunction = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

/**
 * Refuses a host that is a literal non-public IP address; names pass (their addresses are checked at connect).
 * @example checkHost('[::ffff:127.0.0.1]') // throws InvalidCallbackUrlError (loopback)
 */
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
 * @example new https.Agent({ lookup: guardLookup() })
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

// The callback URL's error and words for every caller, as before the move: fetch-image tells a refusal by its class.
function refusal(address: string, cls: string, hostname?: string): InvalidCallbackUrlError {
  const what = cls === 'metadata' ? 'a cloud metadata' : `a ${cls}`;
  const via = hostname && hostname !== address ? `${hostname} resolves to ${address}` : address;
  return new InvalidCallbackUrlError(`The callback URL points to ${what} address (${via}); allow it with \`allowPrivateNetworks\`.`);
}
