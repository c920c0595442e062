import { parseUrl } from '../http/url.js';
/** The checks and the printing of a Redis URL, one place for every part that takes one. */

/** Whether `url` is a `redis://` or `rediss://` URL with a host. */
export function isRedisUrl(url: unknown): url is string {
  const parsed = typeof url === 'string' ? parseUrl(url) : null;
  return parsed !== null && (parsed.protocol === 'redis:' || parsed.protocol === 'rediss:') && parsed.host !== '';
}

/** Throws a `TypeError` naming `option` unless `url` is a `redis://` or `rediss://` URL with a host. */
export function assertRedisUrl(url: unknown, option: string): asserts url is string {
  if (!isRedisUrl(url)) throw new TypeError(`Expected \`${option}\` to be a redis:// or rediss:// URL, got ${typeof url === 'string' ? JSON.stringify(redactRedisUrl(url)) : String(url)}.`);
}

/** A Redis URL as logs and messages may show it: scheme, host, port and database, never the user or password. */
export function redactRedisUrl(url: string): string {
  const parsed = parseUrl(url);
  // Not a URL: whatever follows an @ may be a password, and nothing before it is needed to recognise it.
  return parsed ? `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}` : url.replace(/^.*@/, '***@');
}
