import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../../../version.js';
import { MEDIA_FILE, parseRange } from '../../core/media-signer.js';
import { fail, type Result } from '../../result.js';
import type { Service } from '../../service.js';

/** What GET /media/{file} sends when the link is good: a file, whole or one byte range. */
export interface MediaFile {
  status: 200 | 206;
  headers: Record<string, string>;
  path: string;
  start: number;
  end: number;
}

/** How long a clip's file is "still being saved" after it ends, when its prompt says `simulate:media_not_ready`. */
export const MEDIA_NOT_READY_MS = 30_000;

const MEDIA = fileURLToPath(new URL('templates/media/', packageRoot));

/**
 * GET /v1/media/{file}?exp&sig[&download=1] (spec 4.18): the signature is the credential. Checked in this
 * order: the file name (404), the signature (403 invalid_signature), the clip (404 once deleted), the
 * expiry (410 link_expired), the file being saved (409 media_not_ready with Retry-After). Then the
 * sample clip or poster in the clip's ratio, whole (200) or one `Range` (206; 416 past the end).
 */
export async function mediaFile(service: Service, file: string, query: Record<string, unknown>, range: string | undefined): Promise<MediaFile | Result> {
  const match = MEDIA_FILE.exec(file);
  if (!match) return fail('not_found', { detail: 'A media file is <clip id>.mp4 or <clip id>.jpg.' });
  const now = service.clock.now();
  const check = service.signer.check(file, query.exp, query.sig, now);
  if (check === 'invalid_signature') return fail('invalid_signature', { detail: 'The link is not signed by this service, or was changed.' });
  const video = service.videos.get(Number(match[1]));
  if (!video || video.status !== 'done') return fail('not_found', { detail: 'No such clip: it was deleted, or never finished.' });
  if (check === 'link_expired') return fail('link_expired', { detail: 'Signed links last 7 days: GET /videos/{id} again for a fresh one.' });
  if (video.prompt.includes('simulate:media_not_ready') && now < (video.completedAt ?? 0) + MEDIA_NOT_READY_MS) {
    const retryAfter = Math.max(1, Math.ceil(((video.completedAt ?? 0) + MEDIA_NOT_READY_MS - now) / 1000));
    return fail('media_not_ready', { detail: 'The clip finished and its file is still being saved.', retryAfter });
  }
  const kind = match[2] as 'mp4' | 'jpg';
  const ratio = video.ratio.replace(':', 'x');
  const path = `${MEDIA}${kind === 'mp4' ? `clip-${ratio}.mp4` : `poster-${ratio}.jpg`}`;
  const { size } = await stat(path);
  const headers: Record<string, string> = {
    'content-type': kind === 'mp4' ? 'video/mp4' : 'image/jpeg',
    'accept-ranges': 'bytes',
    // The link is the credential: keep it out of shared caches.
    'cache-control': 'private, max-age=3600',
  };
  if (query.download === '1') headers['content-disposition'] = `attachment; filename="clip-${video.id}.${kind}"`;
  const wanted = parseRange(range, size);
  if (wanted === 'unsatisfiable') {
    const result = fail('range_not_satisfiable', { detail: `The range is outside the ${size} bytes of the file.` });
    return { ...result, headers: { ...result.headers, 'content-range': `bytes */${size}` } };
  }
  if (wanted === null) return { status: 200, headers: { ...headers, 'content-length': String(size) }, path, start: 0, end: size - 1 };
  const { start, end } = wanted;
  return { status: 206, headers: { ...headers, 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': String(end - start + 1) }, path, start, end };
}
