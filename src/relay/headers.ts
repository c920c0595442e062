import type { RawHeaders } from './frames.js';

// RFC 9110 §7.6.1 and RFC 9112: these describe one connection, not the message, so each hop sets its own.
// `host` and `content-length` are set again by the next hop for the bytes it sends; `expect` would make
// the local request wait for a 100-continue that the relay already answered.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
  'http2-settings',
]);

/**
 * The end-to-end headers of `raw` (Node's `rawHeaders`), in order and with repeats, without hop-by-hop
 * ones: the fixed list, `proxy-*`, and any header the `Connection` header names.
 * @example endToEnd(req.rawHeaders)
 */
export function endToEnd(raw: readonly string[]): RawHeaders {
  // Each name lowered once; the names `Connection` lists are looked for only when there is one (once per
  // event each way through the relay and listen).
  let named: Set<string> | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length !== 10 || raw[i]!.toLowerCase() !== 'connection') continue;
    named ??= new Set();
    for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
  }
  const out: RawHeaders = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (isHopByHop(name) || (named !== null && named.has(name.toLowerCase()))) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/** Names as spelt on the wire → hop-by-hop or not: senders and apps spell the same few names every time. */
const HOP_BY_HOP_SEEN = new Map<string, boolean>();

function isHopByHop(name: string): boolean {
  let hop = HOP_BY_HOP_SEEN.get(name);
  if (hop === undefined) {
    const lower = name.toLowerCase();
    hop = HOP_BY_HOP.has(lower) || lower.startsWith('proxy-');
    // Bounded: a stranger sending ever new names cannot grow it past this.
    if (HOP_BY_HOP_SEEN.size >= 1024) HOP_BY_HOP_SEEN.clear();
    HOP_BY_HOP_SEEN.set(name, hop);
  }
  return hop;
}

/** The first value of header `name` (lowercase; matched case-insensitively) in raw headers, or `undefined`. */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  // Lowered only when the length matches: three look-ups per event would lower every name.
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && (key === name || key.toLowerCase() === name)) return raw[i + 1];
  }
  return undefined;
}
