import { isIPv4, isIPv6 } from 'node:net';

/** Why an address is not a public unicast one; `null` for a public address. */
export type AddressClass =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'metadata'
  | 'reserved';

type V4Range = [base: number, bits: number, cls: AddressClass];
type V6Range = [hextets: number[], bits: number, cls: AddressClass];

// Checked in order, so the specific metadata addresses win over the wider ranges that hold them.
const V4_RANGES: V4Range[] = [
  [v4('169.254.169.254'), 32, 'metadata'], // AWS, GCP, Azure, OpenStack instance metadata
  [v4('0.0.0.0'), 8, 'unspecified'], // "this network"; 0.0.0.0 reaches the local host on Linux
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'cgnat'], // RFC 6598 shared address space (also Alibaba's metadata 100.100.100.200)
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'], // IETF protocol assignments
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'reserved'], // benchmarking networks, often routed internally
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'], // includes the broadcast address
];

const V6_RANGES: V6Range[] = [
  [v6('fd00:ec2::254'), 128, 'metadata'], // AWS instance metadata over IPv6
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('fe80::'), 10, 'link-local'],
  [v6('fec0::'), 10, 'private'], // deprecated site-local, still routed by some stacks
  [v6('fc00::'), 7, 'private'], // unique local addresses
  [v6('ff00::'), 8, 'multicast'],
  [v6('100::'), 64, 'reserved'], // discard prefix
  [v6('::'), 96, 'reserved'], // deprecated IPv4-compatible addresses (::a.b.c.d)
];

// Prefixes that carry an IPv4 address in their last 32 bits; that address decides.
const EMBEDDED_V4: [hextets: number[], bits: number][] = [
  [v6('::ffff:0:0'), 96], // IPv4-mapped
  [v6('::ffff:0:0:0'), 96], // IPv4-translated (SIIT, RFC 6145)
  [v6('64:ff9b::'), 96], // NAT64 well-known prefix (RFC 6052)
  [v6('64:ff9b:1::'), 48], // NAT64 local-use prefix (RFC 8215)
];

const SIX_TO_FOUR = v6('2002::');
const TEREDO = v6('2001::');

/**
 * Classifies an IP address (v4, v6, or v4-mapped v6) for the outbound address guard (`outbound-guard.ts`).
 * @example classifyAddress('::ffff:127.0.0.1') // 'loopback'
 * @example classifyAddress('93.184.215.14') // null (public)
 */
export function classifyAddress(address: string): AddressClass | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIPv4(bare)) return classifyV4(v4(bare));
  if (!isIPv6(bare)) throw new TypeError(`Expected an IP address, got ${JSON.stringify(address)}.`);
  // A zone index (fe80::1%eth0) only names the interface.
  const hextets = v6(bare.split('%')[0]!);
  for (const [prefix, bits] of EMBEDDED_V4) {
    if (inV6(hextets, prefix, bits)) return classifyV4(((hextets[6]! << 16) | hextets[7]!) >>> 0);
  }
  // 6to4 (RFC 3056) carries the IPv4 address of its relay in bits 16-47; a relay reaches that address.
  if (inV6(hextets, SIX_TO_FOUR, 16)) return classifyV4(((hextets[1]! << 16) | hextets[2]!) >>> 0);
  // Teredo (RFC 4380) carries the client's IPv4 address in the last 32 bits, inverted.
  if (inV6(hextets, TEREDO, 32)) return classifyV4((((hextets[6]! << 16) | hextets[7]!) ^ 0xffffffff) >>> 0);
  for (const [prefix, bits, cls] of V6_RANGES) if (inV6(hextets, prefix, bits)) return cls;
  return null;
}

function classifyV4(value: number): AddressClass | null {
  for (const [base, bits, cls] of V4_RANGES) {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if (((value & mask) >>> 0) === base) return cls;
  }
  return null;
}

function inV6(hextets: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((hextets[i]! & mask) !== (prefix[i]! & mask)) return false;
  }
  return true;
}

function v4(text: string): number {
  const parts = text.split('.').map(Number);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

/** Expands a valid IPv6 address (with `::` and an optional dotted IPv4 tail) into 8 numbers. */
function v6(text: string): number[] {
  let body = text.toLowerCase();
  const dotted = body.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const value = v4(dotted[1]!);
    body = `${body.slice(0, -dotted[1]!.length)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = body.split('::') as [string, string | undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((h) => parseInt(h, 16)));
  const left = parse(head);
  const right = parse(rest ?? '');
  const fill = rest === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}
