import { z } from 'zod';
import { VIDEO_ERROR_CODES } from '../../protocol/events.js';
import { Link, Timestamp, Warning } from './common.js';
import { VIDEO_MODELS } from './pricing.js';
import { ASSET_SOURCES, RATIOS, VIDEO_STATUSES } from './videos.js';

// What the clip endpoints answer (spec 2.1-2.5), as schemas: the OpenAPI document's response bodies, and
// what the suite checks every answer against. The requests and their rules are in videos.ts.
const VideoModelId = z.enum(VIDEO_MODELS);
const ErrorCode = z.enum(VIDEO_ERROR_CODES as [string, ...string[]]);
const ConsentValue = z.enum(['self', 'permission', 'no_real_person']);

/** Spec 2.1. */
export const Video = z
  .object({
    id: z.int(),
    status: z.enum(VIDEO_STATUSES),
    prompt: z.string(),
    video_url: Link.nullable().meta({ description: 'Absolute signed link valid 7 days; null until done.' }),
    poster_url: Link.nullable(),
    share_page_url: Link.nullable(),
    credits_used: z.int().meta({ description: '0 after a refund.' }),
    refunded: z.boolean(),
    model: VideoModelId.nullable(),
    duration: z.int().nullable(),
    ratio: z.enum(RATIOS).nullable(),
    progress: z.string().nullable(),
    error: z.string().nullable().meta({ description: 'Short human sentence; the text may change, build on error_code.' }),
    error_code: ErrorCode.nullable(),
    created_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable(),
    poll_url: Link,
  })
  .meta({ id: 'Video' });

export const VideoList = z.object({ data: z.array(Video), total: z.int(), limit: z.int(), offset: z.int() }).meta({ id: 'VideoList' });

/** Spec 2.2. */
export const CreateVideoResponse = z
  .object({
    id: z.int(),
    status: z.literal('pending'),
    credits_used: z.int(),
    duration: z.int(),
    ratio: z.enum(RATIOS),
    model: VideoModelId,
    prompt: z.string(),
    image_urls: z.array(z.string()),
    asset_ids_used: z.array(z.int()).nullable(),
    asset_source: z.enum(ASSET_SOURCES),
    subject_consent: ConsentValue.nullable(),
    callback_url: z.string().nullable(),
    callback_enabled: z.boolean(),
    estimated_time_seconds: z.int(),
    created_at: Timestamp,
    poll_url: Link,
    warnings: z.array(Warning),
  })
  .meta({ id: 'CreateVideoResponse' });

/** Spec 2.3. */
export const RetryResponse = z
  .object({
    id: z.int(),
    status: z.literal('pending'),
    retry_of_task_id: z.int(),
    credits_used: z.int(),
    free_retry: z.literal(false).meta({ deprecated: true, description: 'Kept for compatibility; always false (spec 9).' }),
    prompt: z.string(),
    model: VideoModelId,
    duration: z.int(),
    ratio: z.enum(RATIOS),
    callback_url: z.string().nullable(),
    callback_enabled: z.boolean(),
    estimated_time_seconds: z.int(),
    created_at: Timestamp,
    poll_url: Link,
  })
  .meta({ id: 'RetryResponse' });

/** Spec 2.4. */
/** Spec 2.4 `action`: a queued clip is cancelled, an ended one deleted. */
export const DELETE_ACTIONS = ['cancelled', 'deleted'] as const;
export type DeleteAction = (typeof DELETE_ACTIONS)[number];
export const DeleteVideoResponse = z.object({ success: z.boolean(), action: z.enum(DELETE_ACTIONS), id: z.int(), credits_refunded: z.int() }).meta({ id: 'DeleteVideoResponse' });

/** Spec 2.5. */
export const BatchResponse = z
  .object({
    batch_id: z.string(),
    total_credits_used: z.int(),
    items_count: z.int(),
    created_at: Timestamp,
    items: z.array(
      z.object({
        index: z.int(),
        ok: z.boolean(),
        id: z.int(),
        status: z.enum(VIDEO_STATUSES),
        credits_used: z.int(),
        prompt: z.string(),
        model: VideoModelId,
        duration: z.int(),
        ratio: z.enum(RATIOS),
        asset_source: z.enum(ASSET_SOURCES),
        asset_ids_used: z.array(z.int()).nullable(),
        subject_consent: ConsentValue.nullable(),
        callback_enabled: z.boolean(),
        estimated_time_seconds: z.int(),
        poll_url: Link,
      }),
    ),
  })
  .meta({ id: 'BatchResponse' });
