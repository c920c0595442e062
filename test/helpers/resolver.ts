import type { LookupFunction } from '../../src/emitter/index.js';

/** A DNS resolver for tests that answers every name with the given addresses, recording the names asked. */
export function resolver(...addresses: string[]): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const lookup: LookupFunction = (hostname, options, callback) => {
    calls.push(hostname);
    const all = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (options.all) callback(null, all);
    else callback(null, all[0]!.address, all[0]!.family);
  };
  return Object.assign(lookup, { calls });
}
