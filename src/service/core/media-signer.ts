import { createHmac, timingSafeEqual } from 'node:crypto';
import { LIMITS } from '../contract/limits.js';

/** Spec 2.1 and 4.18: signed media links are valid 7 days. */
export const MEDIA_LINK_TTL_MS = LIMITS.signedLinkMs;

/** Spec 4.18: "digits followed by .mp4 or .jpg". */
export const MEDIA_FILE = /^([1-9]\d{0,15})\.(mp4|jpg)$/;

export type MediaKind = 'mp4' | 'jpg';

/**
 * Signs and checks the `exp` and `sig` of media links (spec 4.18, 5.6). The signature covers the file
 * name and the expiry, keyed with the service's own secret (kept in its data file, so links survive a
 * restart): a link cannot be moved to another clip, nor its expiry pushed back.
 */
export class MediaSigner {
  readonly #secret: string;

  constructor(secret: string) {
    if (typeof secret !== 'string' || secret.length < 16) throw new TypeError('Expected the media signing secret to be a string of at least 16 characters.');
    this.#secret = secret;
  }

  /** The path and query of a link to `file` that works until `now` + 7 days. */
  link(file: string, now: number): string {
    const exp = Math.floor((now + MEDIA_LINK_TTL_MS) / 1000);
    return `/v1/media/${file}?exp=${exp}&sig=${this.#sign(file, exp)}`;
  }

  /**
   * Checks a request's `exp` and `sig` for `file`: the signature first (403 invalid_signature for a
   * missing, malformed or wrong one), then the expiry (410 link_expired).
   */
  check(file: string, exp: unknown, sig: unknown, now: number): 'ok' | 'invalid_signature' | 'link_expired' {
    if (typeof exp !== 'string' || !/^\d{1,12}$/.test(exp) || typeof sig !== 'string' || !/^[0-9a-f]{64}$/.test(sig)) return 'invalid_signature';
    const expected = Buffer.from(this.#sign(file, Number(exp)), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(sig, 'hex'))) return 'invalid_signature';
    return Number(exp) * 1000 <= now ? 'link_expired' : 'ok';
  }

  /**
   * The path and query of a storage link to `file` that works until `until` (ms): where a 302 of a media
   * link points (spec 4.18, with `serve --media-redirect`). Signed apart from media links, so neither can
   * stand for the other.
   */
  storageLink(file: string, until: number, download: boolean): string {
    const expires = Math.floor(until / 1000);
    return `/storage/${file}?expires=${expires}&token=${this.#sign(`storage:${file}:${download ? 1 : 0}`, expires)}${download ? '&download=1' : ''}`;
  }

  /** Checks a storage link as `check` does a media link. */
  checkStorage(file: string, expires: unknown, token: unknown, download: boolean, now: number): 'ok' | 'invalid_signature' | 'link_expired' {
    return this.check(`storage:${file}:${download ? 1 : 0}`, expires, token, now);
  }

  #sign(file: string, exp: number): string {
    return createHmac('sha256', this.#secret).update(`${file}\n${exp}`).digest('hex');
  }
}

/** One byte range to serve: `start` and `end` inclusive. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * A `Range` header for a body of `size` bytes (RFC 9110 §14): one range (`a-b`, `a-`, or the suffix
 * `-n`), `'unsatisfiable'` (416) when none of it lies inside the body, or `null` to send the whole body
 * (no header, another unit, a malformed value, or several ranges, which a server may answer whole).
 * @example parseRange('bytes=0-1023', 4096) // { start: 0, end: 1023 }
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  if (header === undefined) return null;
  const match = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return null;
  const [, first, last] = match;
  if (first === '' && last === '') return null;
  if (first === '') {
    // A suffix: the last n bytes.
    const length = Number(last);
    if (length === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
