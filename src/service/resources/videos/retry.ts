import type { VideoErrorCode } from '../../../protocol/events.js';
import { RETRYABLE_ERROR_CODES } from '../../contract/videos.js';
import type { Video } from './lifecycle.js';
import type { Refusal } from '../../contract/problems.js';

/**
 * Whether POST /videos/{id}/retry may make a new task of `video` (spec 3.1 and 4.6), checked in this
 * order: it failed (400 not_failed), with a retryable error_code (400 not_retryable), it is not itself a
 * retry (400 cannot_retry_a_retry), no retry of it is being saved (409 retry_in_progress) nor was made
 * (409 already_retried), and its photos can be used again (422 consent_required: external image_urls were
 * moderated for the first request only). `null`: go ahead and charge.
 */
export function retryRefusal(video: Video, inProgress: boolean, external: (url: string) => boolean = (url) => !url.startsWith('asset://')): Refusal | null {
  if (video.status !== 'error') return { code: 'not_failed', detail: `Task ${video.id} is ${video.status}; only a failed task can be retried.` };
  if (!RETRYABLE_ERROR_CODES.has(video.errorCode!)) {
    return { code: 'not_retryable', detail: `Task ${video.id} failed with ${video.errorCode}; only ${[...RETRYABLE_ERROR_CODES].join(', ')} can be retried.` };
  }
  if (video.retryOf !== null) return { code: 'cannot_retry_a_retry', detail: `Task ${video.id} is a retry of task ${video.retryOf}; submit a new request.` };
  // While the first retry is being saved, a second one is told it is starting, not that it happened.
  if (inProgress) return { code: 'retry_in_progress', detail: `A retry of task ${video.id} is starting.` };
  if (video.retriedBy !== null) return { code: 'already_retried', detail: `Task ${video.id} was already retried as task ${video.retriedBy}.` };
  if (video.assetSource === 'image_urls' && video.imageUrls.some(external)) {
    return { code: 'consent_required', detail: `Task ${video.id} used external image URLs, moderated for that request only; submit a new request (or upload them as assets).` };
  }
  return null;
}

/** How the retry of a simulated failure ends: done, unless its marker was `:sticky`. */
export function retryOutcome(video: Video): 'done' | VideoErrorCode {
  return video.sticky && video.errorCode !== null ? video.errorCode : 'done';
}
