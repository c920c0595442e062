/**
 * `new URL(value, base)`, or `null` when it cannot parse: the one way cliphook asks whether a string is a URL.
 * Not `URL.canParse`: on Node 20, once optimised, it refuses what `new URL` takes when the string holds a
 * character outside ASCII (`URL.canParse('http://é.com/x')`, `URL.canParse('//é', base)`: true at first, then
 * false), so a check by it and the parse after it could disagree (test/http/url.test.ts).
 */
export function parseUrl(value: string, base?: string | URL): URL | null {
  try {
    return new URL(value, base);
  } catch {
    return null;
  }
}

/** The URL of `value` when it is an absolute http: or https: URL, else `null`. */
export function httpUrlOf(value: unknown): URL | null {
  const url = typeof value === 'string' ? parseUrl(value) : null;
  return url && (url.protocol === 'http:' || url.protocol === 'https:') ? url : null;
}
