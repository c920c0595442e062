import { describe, expect, it } from 'vitest';
import { parseEvent } from '../../../../src/protocol/events.js';
import { MediaSigner } from '../../../../src/service/core/media-signer.js';
import type { Video } from '../../../../src/service/resources/videos/lifecycle.js';
import { batchItemView, createdView, retryView, videoView, webhookPayload, type ViewContext } from '../../../../src/service/resources/videos/views.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const signer = new MediaSigner('media-secret-0123456789');
const ctx: ViewContext = { origin: 'http://127.0.0.1:8080', signer, now: T0 + 10_000, estimate: () => 4 };

function video(overrides: Partial<Video> = {}): Video {
  return {
    id: 7, accountId: 1, keyId: 'key_a', status: 'pending', prompt: 'a fox', model: 'cinema', duration: 10, ratio: '9:16', resolution: '480p',
    imageUrls: ['https://example.com/a.jpg'], assetIdsUsed: null, assetSource: 'image_urls', subjectConsent: 'self',
    callbackUrl: 'https://example.com/hooks', charged: 27, refunded: false, progress: null, errorCode: null, createdAt: T0,
    startedAt: null, completedAt: null, retryOf: null, retriedBy: null, batchId: null, sticky: false,
    plan: { startAt: T0 + 1_000, endAt: T0 + 4_000, outcome: 'done' },
    ...overrides,
  };
}

describe('video views', () => {
  it('GET /videos/{id} (2.1): every field; links only once done, signed and absolute', () => {
    const pending = videoView(video(), ctx);
    expect(Object.keys(pending)).toEqual([
      'id', 'status', 'prompt', 'video_url', 'poster_url', 'share_page_url', 'credits_used', 'refunded', 'model', 'duration', 'ratio',
      'progress', 'error', 'error_code', 'created_at', 'completed_at', 'poll_url',
    ]);
    expect(pending).toMatchObject({ video_url: null, poster_url: null, credits_used: 27, poll_url: 'http://127.0.0.1:8080/v1/videos/7', created_at: '2026-01-01T00:00:00.000Z' });
    const done = videoView(video({ status: 'done', completedAt: T0 + 4_000, progress: '100%' }), ctx);
    const link = new URL(done.video_url!);
    expect(link.pathname).toBe('/v1/media/7.mp4');
    expect(signer.check('7.mp4', link.searchParams.get('exp'), link.searchParams.get('sig'), ctx.now)).toBe('ok');
    expect(new URL(done.poster_url!).pathname).toBe('/v1/media/7.jpg');
    const failed = videoView(video({ status: 'error', errorCode: 'upstream_busy', refunded: true }), ctx);
    expect(failed).toMatchObject({ credits_used: 0, refunded: true, error_code: 'upstream_busy' });
    expect(failed.error).toEqual(expect.any(String));
  });

  it('POST /videos (2.2), retry (2.3) and batch items (2.5): the spec fields in order', () => {
    expect(Object.keys(createdView(video(), [], ctx))).toEqual([
      'id', 'status', 'credits_used', 'duration', 'ratio', 'model', 'prompt', 'image_urls', 'asset_ids_used', 'asset_source',
      'subject_consent', 'callback_url', 'callback_enabled', 'estimated_time_seconds', 'created_at', 'poll_url', 'warnings',
    ]);
    expect(retryView(video({ retryOf: 3 }), ctx)).toMatchObject({ retry_of_task_id: 3, free_retry: false, status: 'pending' });
    expect(Object.keys(batchItemView(video(), 0, ctx))).toEqual([
      'index', 'ok', 'id', 'status', 'credits_used', 'prompt', 'model', 'duration', 'ratio', 'asset_source', 'asset_ids_used',
      'subject_consent', 'callback_enabled', 'estimated_time_seconds', 'poll_url',
    ]);
  });

  it('the webhook (2.12) is a valid event for both outcomes', () => {
    const completed = webhookPayload(video({ status: 'done', completedAt: T0 + 4_000 }), ctx);
    expect(completed.event).toBe('video.completed');
    expect(parseEvent({ event: completed.event, ...completed.payload, delivered_at: new Date(T0 + 5_000).toISOString() })).toMatchObject({ id: 7, status: 'done' });
    const failed = webhookPayload(video({ status: 'error', errorCode: 'content_rejected', refunded: true, completedAt: T0 + 4_000 }), ctx);
    expect(failed.event).toBe('video.failed');
    expect(parseEvent({ event: failed.event, ...failed.payload, delivered_at: new Date(T0 + 5_000).toISOString() })).toMatchObject({ error_code: 'content_rejected', credits_used: 0 });
  });
});
