import { createHash } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns';
import http, { STATUS_CODES } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { fileTypeFromBuffer } from 'file-type';
import { classifyAddress } from '../../http/address.js';
import { guardLookup, type LookupFunction } from '../../http/outbound-guard.js';
import { InvalidCallbackUrlError } from '../../protocol/errors.js';
import { version } from '../../version.js';
import { ASSET_TYPES, MAX_ASSET_BYTES } from '../contract/assets.js';
import { parseUrl } from '../../http/url.js';

/** The bytes of an image downloaded whole and recognised by its bytes. */
export interface FetchedBytes {
  bytes: Buffer;
  mime: string;
  ext: string;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
}

/** Downloads and checks one external image URL (`fetchImage` below); injectable so tests need no network. */
export type ImageFetcher = (
  url: string,
  options: { strict: boolean },
) => Promise<{ ok: true; bytes?: Buffer; mime?: string; ext?: string; sha256?: string } | { ok: false; code: 'image_fetch_failed' | 'invalid_image_url'; detail: string }>;

/** How `fetchImage` downloads one external `image_urls` entry (spec 4.1, 5). */
export interface FetchImageOptions {
  /** The service's --strict mode: https only, and no private, loopback, link-local or metadata address, checked again at connect time. */
  strict: boolean;
  /** The largest image accepted, in bytes (spec 8). @default 20 * 1024 * 1024 */
  maxBytes?: number;
  /** The whole download, every redirect included, in milliseconds. @default 10_000 */
  timeoutMs?: number;
  /** Redirects followed before giving up. @default 3 */
  maxRedirects?: number;
  /** The DNS lookup for every connection; tests answer names with it. @default dns.lookup */
  lookup?: LookupFunction;
}

/** An image downloaded whole and recognised by its bytes. */
export interface FetchedImage {
  ok: true;
  bytes: Buffer;
  /** `image/jpeg`, `image/png`, `image/webp`, `image/gif` or `image/heic`. */
  mime: string;
  ext: string;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
}

/** Why an image URL was refused, as the service's problem code and a sentence for the developer. */
export interface FetchRefusal {
  ok: false;
  code: 'image_fetch_failed' | 'invalid_image_url';
  detail: string;
}

/**
 * Checks an image URL before any connection: absolute http(s) without credentials, and in strict mode
 * https only and no literal private address. Host names are checked again when they resolve.
 * @example checkImageTarget('http://127.0.0.1:8080/cat.png', false) // { ok: true, url }
 * @example checkImageTarget('https://127.0.0.1/cat.png', true).ok // false (invalid_image_url)
 */
export function checkImageTarget(url: string | URL, strict: boolean): { ok: true; url: URL } | FetchRefusal {
  const parsed = typeof url === 'string' ? parseUrl(url) : url;
  if (!parsed) return invalid(`The image URL ${JSON.stringify(String(url).slice(0, 100))} is not an absolute http(s) URL.`);
  const reason = targetFault(parsed, strict);
  return reason ? invalid(`The image URL ${show(parsed)} ${reason}.`) : { ok: true, url: parsed };
}

/**
 * Resolves a redirect's `Location` against the URL that sent it and checks the target like the original.
 * @example redirectTarget(new URL('https://cdn.example.com/a.png'), 'http://10.0.0.5/a.png', true).ok // false
 */
export function redirectTarget(from: URL, location: string | undefined, strict: boolean): { ok: true; url: URL } | FetchRefusal {
  const next = parseUrl(location ?? '', from);
  if (!next) return failed(`The image URL ${show(from)} redirects to an unreadable Location; link the image file itself.`);
  const reason = targetFault(next, strict);
  return reason ? invalid(`The image URL ${show(from)} redirects to ${show(next)}, which ${reason}.`) : { ok: true, url: next };
}

/**
 * Downloads an image the way the service does before moderating it: redirects checked hop by hop, the
 * size capped while reading, one deadline for the whole download, and the type taken from the bytes.
 * It never throws for the URL or the remote server; a refusal carries the spec 7 code.
 * @example
 * const image = await fetchImage('https://cdn.example.com/cat.png', { strict: true });
 * if (!image.ok) return fail(image.code, { detail: image.detail });
 */
export async function fetchImage(url: string, options: FetchImageOptions): Promise<FetchedImage | FetchRefusal> {
  const { strict, maxBytes = MAX_ASSET_BYTES, timeoutMs = 10_000, maxRedirects = 3, lookup } = options;
  requireOption('maxBytes', maxBytes, Number.isSafeInteger(maxBytes) && maxBytes > 0, 'a positive integer');
  requireOption('timeoutMs', timeoutMs, Number.isFinite(timeoutMs) && timeoutMs > 0, 'a positive number');
  requireOption('maxRedirects', maxRedirects, Number.isSafeInteger(maxRedirects) && maxRedirects >= 0, 'a non-negative integer');
  const first = checkImageTarget(url, strict);
  if (!first.ok) return first;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const seen = new Set<string>();
  let current = first.url;
  try {
    for (let redirects = 0; ; redirects++) {
      seen.add(current.href);
      const hop = await get(current, maxBytes, strict ? strictLookup(lookup) : lookup, controller.signal);
      if ('ok' in hop) return hop;
      if (hop.bytes) return await recognise(current, hop.bytes);
      if (hop.status < 300 || hop.status >= 400 || hop.location === undefined) {
        const text = STATUS_CODES[hop.status] ? ` (${STATUS_CODES[hop.status]})` : '';
        return failed(`The image URL ${show(current)} answered HTTP ${hop.status}${text}; check that it is public, or upload the photo with POST /assets.`);
      }
      const next = redirectTarget(current, hop.location, strict);
      if (!next.ok) return next;
      if (seen.has(next.url.href)) return failed(`The image URL ${show(first.url)} redirects in a loop (back to ${show(next.url)}); link the image file itself.`);
      if (redirects >= maxRedirects) return failed(`The image URL ${show(first.url)} redirects more than ${maxRedirects} times; link the image file itself.`);
      current = next.url;
    }
  } catch (error) {
    return explain(error, current, controller.signal.aborted, timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

interface Hop {
  status: number;
  location?: string;
  bytes?: Buffer;
}

function get(url: URL, maxBytes: number, lookup: LookupFunction | undefined, signal: AbortSignal): Promise<Hop | FetchRefusal> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      // A fresh socket per hop, so each connection goes through its own guarded lookup.
      agent: false,
      headers: { 'user-agent': `cliphook-serve/${version}`, accept: 'image/*' },
      signal,
      ...(lookup ? { lookup } : {}),
    });
    request.on('error', reject);
    request.once('response', (response) => {
      const status = response.statusCode ?? 0;
      // A premature close after `end` or a resolve changes nothing; before them it is a failed download.
      response.once('close', () => reject(Object.assign(new Error('closed early'), { code: 'ECONNRESET' })));
      if (status < 200 || status >= 300) {
        resolve({ status, ...(response.headers.location !== undefined ? { location: response.headers.location } : {}) });
        return response.destroy(); // the body of a redirect or an error page is not needed
      }
      const tooLarge = (): void => {
        resolve(failed(`The image at ${show(url)} is larger than ${size(maxBytes)}; send a smaller file.`));
        response.destroy(); // cut at once: never read or buffer past the cap
      };
      if (Number(response.headers['content-length']) > maxBytes) return tooLarge();
      const chunks: Buffer[] = [];
      let received = 0;
      response.on('data', (chunk: Buffer) => {
        received += chunk.byteLength;
        if (received > maxBytes) return tooLarge();
        chunks.push(chunk);
      });
      response.once('end', () => resolve({ status, bytes: Buffer.concat(chunks, received) }));
      response.on('error', reject);
    });
    request.end();
  });
}

async function recognise(url: URL, bytes: Buffer): Promise<FetchedImage | FetchRefusal> {
  const type = await fileTypeFromBuffer(bytes);
  if (!type) return failed(`The file at ${show(url)} is not an image; link the image file itself, not a page about it.`);
  const ext = ASSET_TYPES.get(type.mime);
  if (!ext) return failed(`The file at ${show(url)} is ${type.mime}; send jpg, png, webp, gif or heic.`);
  const mime = type.mime === 'image/heif' ? 'image/heic' : type.mime;
  return { ok: true, bytes, mime, ext, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** A name that resolved to a non-public address in strict mode. */
class RefusedAddress extends Error {
  constructor(readonly address: string) {
    super(`refused ${address}`);
  }
}

// guardLookup refuses; this records what the name answered, so the refusal can say which address.
function strictLookup(base: LookupFunction = dnsLookup as LookupFunction): LookupFunction {
  let answered: string[] = [];
  const guarded = guardLookup((hostname, options, callback) =>
    base(hostname, options, (error, result, family) => {
      answered = typeof result === 'string' ? [result] : (result ?? []).map((entry) => entry.address);
      callback(error, result, family);
    }),
  );
  return function imageLookup(hostname, options, callback) {
    guarded(hostname, options, (error, address, family) => {
      if (!(error instanceof InvalidCallbackUrlError)) return callback(error, address, family);
      const bad = answered.find((entry) => isIP(entry) !== 0 && classifyAddress(entry) !== null) ?? '';
      callback(new RefusedAddress(bad) as NodeJS.ErrnoException, address, family);
    });
  };
}

function explain(error: unknown, url: URL, timedOut: boolean, timeoutMs: number): FetchRefusal {
  if (timedOut) return failed(`The image at ${show(url)} did not finish downloading within ${timeoutMs} ms; serve it faster or upload the photo with POST /assets.`);
  if (error instanceof RefusedAddress) {
    return invalid(`The image URL ${show(url)} resolves to ${describe(error.address)}, which strict mode refuses.`);
  }
  const code = String((error as NodeJS.ErrnoException | null)?.code ?? '');
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return failed(`The host ${url.hostname} of the image URL was not found in DNS; check the URL.`);
  if (code === 'ECONNREFUSED') return failed(`${url.host} refused the connection for the image URL ${show(url)}; check that the server is running.`);
  // EPROTO is OpenSSL's handshake failure, e.g. https spoken to a plain-http port.
  if (/^(EPROTO$|ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(code)) {
    return failed(`The TLS connection to ${url.host} failed (${code}); the image server needs a valid certificate.`);
  }
  if (code === 'ECONNRESET') return failed(`${url.host} closed the connection before the image at ${show(url)} was complete; try again or upload the photo with POST /assets.`);
  return failed(`The image at ${show(url)} could not be downloaded${code ? ` (${code})` : ''}; try again or upload the photo with POST /assets.`);
}

/** What is wrong with a target, as a clause after "The image URL …", or null when it may be fetched. */
function targetFault(url: URL, strict: boolean): string | null {
  const schemes = strict ? ['https:'] : ['https:', 'http:'];
  if (!schemes.includes(url.protocol)) return `uses ${url.protocol.slice(0, -1)}, but only ${strict ? 'https is accepted in strict mode' : 'https and http are accepted'}`;
  if (url.username || url.password) return 'carries credentials (user:password@), which are never sent; make the image public';
  if (!strict) return null;
  const bare = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  // A literal address never goes through the guarded lookup, so it is checked here.
  if (isIP(bare) !== 0 && classifyAddress(bare) !== null) return `points to ${describe(bare)}, which strict mode refuses`;
  return null;
}

function describe(address: string): string {
  const cls = address ? classifyAddress(address) : null;
  if (!cls) return 'a non-public address';
  return `${cls === 'metadata' ? 'a cloud metadata' : `a ${cls}`} address (${address})`;
}

// Origin and path only: a query may hold a signature, and credentials are never echoed.
function show(url: URL): string {
  const text = `${url.protocol}//${url.host}${url.pathname}`;
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function size(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

function requireOption(name: string, value: unknown, valid: boolean, what: string): void {
  if (!valid) throw new TypeError(`Expected \`${name}\` to be ${what}, got ${String(value)}.`);
}

const invalid = (detail: string): FetchRefusal => ({ ok: false, code: 'invalid_image_url', detail });
const failed = (detail: string): FetchRefusal => ({ ok: false, code: 'image_fetch_failed', detail });
