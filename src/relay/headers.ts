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
  // event each way through the relay and listen: issue 23).
  let named: Set<string> | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length !== 10 || raw[i]!.toLowerCase() !== 'connection') continue;
    named ??= new Set();
    for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
  }
  const out: RawHeaders = [];
  for (let i = 0; i < raw.length; i += 2) {
    const lower = raw[i]!.toLowerCase();
    if (HOP_BY_HOP.has(lower) || lower.startsWith('proxy-') || named?.has(lower)) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/** The first value of header `name` (case-insensitive) in raw headers, or `undefined`. */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) return raw[i + 1];
  return undefined;
}
