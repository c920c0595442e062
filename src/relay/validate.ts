import { parseUrl } from '../http/url.js';
/** Option checks shared by the relay server and the listener: each throws a TypeError naming the option. */

export function positiveInteger(name: string, value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) {
    throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${show(value)}.`);
  }
  return value as number;
}

export function nonEmptyString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new TypeError(`Expected \`${name}\` to be a non-empty string, got ${show(value)}.`);
  return value;
}

/** An absolute http(s) URL; `ws:`/`wss:` too when `ws` is set. */
export function httpUrl(name: string, value: unknown, ws = false): URL {
  const url = typeof value === 'string' ? parseUrl(value) : null;
  const schemes = ws ? ['http:', 'https:', 'ws:', 'wss:'] : ['http:', 'https:'];
  if (!url || !schemes.includes(url.protocol)) {
    throw new TypeError(`Expected \`${name}\` to be an absolute ${schemes.map((s) => s.slice(0, -1)).join('/')} URL, got ${show(value)}.`);
  }
  return url;
}

export function fn<T>(name: string, value: T): T {
  if (typeof value !== 'function') throw new TypeError(`Expected \`${name}\` to be a function, got ${show(value)}.`);
  return value;
}

function show(value: unknown): string {
  return typeof value === 'function' ? 'a function' : (JSON.stringify(value) ?? String(value));
}
