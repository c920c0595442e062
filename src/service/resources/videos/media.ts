import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../../../version.js';
import { DAY_MS, LIMITS } from '../../contract/limits.js';
import { MEDIA_FILE } from '../../contract/media.js';
import { ServiceError } from '../../contract/problems.js';
import { parseRange, type MediaSigner } from '../../core/media-signer.js';
import type { VideoLifecycle } from './lifecycle.js';
import type { Site } from '../../core/site.js';

/** How long a clip's file is "still being saved" after it ends, when its prompt says `simulate:media_not_ready`. */
export const MEDIA_NOT_READY_MS = 30_000;
/** How long a storage link of a 302 works (spec 4.18: "a short-lived storage URL"). */
export const STORAGE_LINK_MS = 60_000;

const MEDIA = fileURLToPath(new URL('templates/media/', packageRoot));

/** What GET /media/{file} answers when the link is good: a file (whole or one range), or a redirect to storage. */
export type MediaAnswer =
  | { kind: 'file'; status: 200 | 206; headers: Record<string, string>; path: string; start: number; end: number }
  | { kind: 'redirect'; location: string };

export interface MediaFilesOptions {
  lifecycle: VideoLifecycle;
  signer: MediaSigner;
  clock: { now(): number; actFor?(account: number): void };
  site: Site;
  /** Answer a good link with 302 to a short-lived storage URL (spec 4.18) instead of the file. @default false */
  redirect?: boolean;
}

/**
 * The signed media links of spec 4.18 (and 2.1, 5.6): the signature is the credential. Checked in this
 * order: the file name (404), the signature (403 invalid_signature), the clip (404 once deleted), the expiry
 * (410 link_expired), the file being saved (409 media_not_ready with Retry-After). Then the sample clip or
 * poster in the clip's ratio, whole (200) or one `Range` (206; 416 past the end), or with `redirect` a 302
 * to `/storage/<file>`, signed for a minute, which serves the same bytes.
 */
export class MediaFiles {
  readonly #options: MediaFilesOptions;

  constructor(options: MediaFilesOptions) {
    this.#options = options;
  }

  /** GET /v1/media/{file}?exp&sig[&download=1] */
  async open(file: string, { exp, sig, download }: { exp: number; sig: string; download?: string | undefined }, range: string | undefined): Promise<MediaAnswer> {
    const { signer, clock } = this.#options;
    this.#actForOwner(file);
    const video = this.#checked(file, signer.check(file, String(exp), sig, clock.now()));
    if (this.#options.redirect) {
      const storage = signer.storageLink(file, clock.now() + STORAGE_LINK_MS, download === '1');
      return { kind: 'redirect', location: `${this.#options.site.origin}${storage}` };
    }
    return this.#file(video, file, download === '1', range);
  }

  /** GET /storage/{file}?expires&token[&download=1]: where a 302 of `open` points. */
  async storage(file: string, { expires, token, download }: Record<string, string | undefined>, range: string | undefined): Promise<MediaAnswer> {
    const { signer, clock } = this.#options;
    this.#actForOwner(file);
    const video = this.#checked(file, signer.checkStorage(file, expires, token, download === '1', clock.now()));
    return this.#file(video, file, download === '1', range);
  }

  /**
   * A link's expiry is read on the time of the account whose clip it is: another account's advance does not
   * expire it.
   */
  #actForOwner(file: string): void {
    const match = MEDIA_FILE.exec(file);
    const owner = match ? this.#options.lifecycle.get(Number(match[1]))?.accountId : undefined;
    if (owner !== undefined) this.#options.clock.actFor?.(owner);
  }

  #checked(file: string, check: 'ok' | 'invalid_signature' | 'link_expired') {
    const match = MEDIA_FILE.exec(file);
    if (!match) throw new ServiceError('not_found', 'A media file is <clip id>.mp4 or <clip id>.jpg.');
    if (check === 'invalid_signature') throw new ServiceError('invalid_signature', 'The link is not signed by this service, or was changed.');
    const video = this.#options.lifecycle.get(Number(match[1]));
    if (!video || video.status !== 'done') throw new ServiceError('not_found', 'No such clip: it was deleted, or never finished.');
    if (check === 'link_expired') throw new ServiceError('link_expired', `Signed links last ${LIMITS.signedLinkMs / DAY_MS} days: GET /videos/{id} again for a fresh one.`);
    const now = this.#options.clock.now();
    const savedAt = (video.completedAt ?? 0) + MEDIA_NOT_READY_MS;
    if (video.prompt.includes('simulate:media_not_ready') && now < savedAt) {
      throw new ServiceError('media_not_ready', 'The clip finished and its file is still being saved.', { retryAfter: Math.max(1, Math.ceil((savedAt - now) / 1000)) });
    }
    return video;
  }

  async #file(video: { id: number; ratio: string }, file: string, download: boolean, range: string | undefined): Promise<MediaAnswer> {
    const kind = file.endsWith('.mp4') ? 'mp4' : 'jpg';
    const ratio = video.ratio.replace(':', 'x');
    const path = `${MEDIA}${kind === 'mp4' ? `clip-${ratio}.mp4` : `poster-${ratio}.jpg`}`;
    const { size } = await stat(path);
    const headers: Record<string, string> = {
      'content-type': kind === 'mp4' ? 'video/mp4' : 'image/jpeg',
      'accept-ranges': 'bytes',
      // The link is the credential: keep it out of shared caches.
      'cache-control': 'private, max-age=3600',
    };
    if (download) headers['content-disposition'] = `attachment; filename="clip-${video.id}.${kind}"`;
    const wanted = parseRange(range, size);
    if (wanted === 'unsatisfiable') throw new ServiceError('range_not_satisfiable', `The range is outside the ${size} bytes of the file.`, { extra: { size } });
    if (wanted === null) return { kind: 'file', status: 200, headers: { ...headers, 'content-length': String(size) }, path, start: 0, end: size - 1 };
    const { start, end } = wanted;
    return { kind: 'file', status: 206, headers: { ...headers, 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': String(end - start + 1) }, path, start, end };
  }
}
