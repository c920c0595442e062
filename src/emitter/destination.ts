// A delivery's URL is parsed once per attempt here, not stored on its record: a cache of the latest
// URLs seen keeps that to one parse per callback URL in the common case (a few receivers, many events).
const CACHE_LIMIT = 1024;
const cache = new Map<string, string>();

/**
 * The destination of a callback URL, as fair delivery shares slots out: its origin (scheme, host and
 * port), so every path on one receiver is one destination and another port is another.
 */
export function destinationOf(url: string): string {
  let origin = cache.get(url);
  if (origin === undefined) {
    // A stored URL that no longer parses is its own destination: its attempt fails on the URL check.
    origin = URL.canParse(url) ? new URL(url).origin : url;
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(url, origin);
  }
  return origin;
}
