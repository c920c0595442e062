import type { WebhookEventName } from '../../../protocol/events.js';
import type { MediaSigner } from '../../core/media-signer.js';
import { errorSentence, VideoLifecycle, type Video } from './lifecycle.js';
import type { VideoCommand } from '../../contract/videos.js';

type Warning = VideoCommand['warnings'][number];

/** What every view needs: the service's origin (`http://127.0.0.1:8080`), the link signer and the time. */
export interface ViewContext {
  origin: string;
  signer: MediaSigner;
  now: number;
  /** Estimated seconds to done for a new clip (spec 2.2). */
  estimate: (video: Video) => number;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The absolute URL of GET /videos/{id} (spec 2.1 `poll_url`). */
export function pollUrl(ctx: Pick<ViewContext, 'origin'>, id: number): string {
  return `${ctx.origin}/v1/videos/${id}`;
}

/** A clip as GET /videos/{id} shows it (spec 2.1): signed links, fresh on every call, once done. */
export function videoView(video: Video, ctx: ViewContext) {
  const done = video.status === 'done';
  return {
    id: video.id,
    status: video.status,
    prompt: video.prompt,
    video_url: done ? `${ctx.origin}${ctx.signer.link(`${video.id}.mp4`, ctx.now)}` : null,
    poster_url: done ? `${ctx.origin}${ctx.signer.link(`${video.id}.jpg`, ctx.now)}` : null,
    // Sharing is a web-UI feature the local service does not have.
    share_page_url: null,
    credits_used: VideoLifecycle.creditsUsed(video),
    refunded: video.refunded,
    model: video.model,
    duration: video.duration,
    ratio: video.ratio,
    progress: video.progress,
    error: errorSentence(video.errorCode),
    error_code: video.errorCode,
    created_at: iso(video.createdAt),
    completed_at: iso(video.completedAt),
    poll_url: pollUrl(ctx, video.id),
  };
}

/** The 202 of POST /videos (spec 2.2). */
export function createdView(video: Video, warnings: readonly Warning[], ctx: ViewContext) {
  return {
    id: video.id,
    status: 'pending' as const,
    credits_used: video.charged,
    duration: video.duration,
    ratio: video.ratio,
    model: video.model,
    prompt: video.prompt,
    image_urls: video.imageUrls,
    asset_ids_used: video.assetIdsUsed,
    asset_source: video.assetSource,
    subject_consent: video.subjectConsent,
    ...accepted(video, ctx),
    warnings: [...warnings],
  };
}

/** The 202 of POST /videos/{id}/retry (spec 2.3). */
export function retryView(video: Video, ctx: ViewContext) {
  return {
    id: video.id,
    status: 'pending' as const,
    retry_of_task_id: video.retryOf!,
    credits_used: video.charged,
    // Spec 9: kept for compatibility, always false.
    free_retry: false as const,
    prompt: video.prompt,
    model: video.model,
    duration: video.duration,
    ratio: video.ratio,
    ...accepted(video, ctx),
  };
}

/** The members every answer to a new task ends with (spec 2.2, 2.3): where its webhook goes, when it should end, where to poll. */
function accepted(video: Video, ctx: ViewContext) {
  return {
    callback_url: video.callbackUrl,
    callback_enabled: video.callbackUrl !== null,
    estimated_time_seconds: ctx.estimate(video),
    created_at: iso(video.createdAt)!,
    poll_url: pollUrl(ctx, video.id),
  };
}

/** One item of the 207 of POST /videos/batch (spec 2.5). */
export function batchItemView(video: Video, index: number, ctx: ViewContext) {
  return {
    index,
    ok: true,
    id: video.id,
    status: video.status,
    credits_used: video.charged,
    prompt: video.prompt,
    model: video.model,
    duration: video.duration,
    ratio: video.ratio,
    asset_source: video.assetSource,
    asset_ids_used: video.assetIdsUsed,
    subject_consent: video.subjectConsent,
    callback_enabled: video.callbackUrl !== null,
    estimated_time_seconds: ctx.estimate(video),
    poll_url: pollUrl(ctx, video.id),
  };
}

/**
 * The webhook of spec 2.12 for a clip that reached done or error, without `delivered_at` (each attempt
 * sets its own). Its `video_url` is the clip's page, which "opens only for a signed-in browser" (spec
 * 6.5): a receiver that needs the file fetches GET /videos/{id} for a signed link, as against the real service.
 */
export function webhookPayload(video: Video, ctx: Pick<ViewContext, 'origin'>): { event: WebhookEventName; payload: Record<string, unknown> } {
  const done = video.status === 'done';
  return {
    event: done ? 'video.completed' : 'video.failed',
    payload: {
      id: video.id,
      status: video.status,
      prompt: video.prompt,
      video_url: done ? `${ctx.origin}/videos/${video.id}` : null,
      error: errorSentence(video.errorCode),
      error_code: video.errorCode,
      credits_used: VideoLifecycle.creditsUsed(video),
      duration: video.duration,
      model: video.model,
      created_at: iso(video.createdAt),
      completed_at: iso(video.completedAt),
    },
  };
}
