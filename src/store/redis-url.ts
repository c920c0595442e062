/** The checks and the printing of a Redis URL, one place for every part that takes one (issue 13). */

/** Throws a `TypeError` naming `option` unless `url` is a `redis://` or `rediss://` URL with a host. */
export function assertRedisUrl(url: unknown, option: string): asserts url is string {
  let ok = false;
  try {
    const parsed = new URL(url as string);
    ok = typeof url === 'string' && (parsed.protocol === 'redis:' || parsed.protocol === 'rediss:') && parsed.host !== '';
  } catch {
    // not a URL at all: refused below
  }
  if (!ok) throw new TypeError(`Expected \`${option}\` to be a redis:// or rediss:// URL, got ${typeof url === 'string' ? JSON.stringify(redactRedisUrl(url)) : String(url)}.`);
}

/** A Redis URL as logs and messages may show it: scheme, host, port and database, never the user or password. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    // Not a URL: whatever follows an @ may be a password, and nothing before it is needed to recognise it.
    return url.replace(/^.*@/, '***@');
  }
}
