import { z } from 'zod';
import type { VideoErrorCode } from '../../protocol/events.js';
import { assetUriId, canonicalConsent, ImageUrl, pathId, queryEnum, queryInteger, SubjectConsentInput, type SubjectConsent } from './common.js';
import { LIMITS } from './limits.js';
import { DEFAULT_DURATION, isVideoModel, MODEL_SPECS, VIDEO_MODELS, type Resolution, type VideoModel } from './pricing.js';
import { cross, rule, ServiceError } from './problems.js';

// Clips: spec 2.1-2.5, 3.1 and 4.1-4.6, as data. The request rules that span fields live here too, so
// POST /v1/videos, each item of a batch and the assistant's create_clip run the same ones. Defaults are
// said in descriptions, not `default`: client generators (openapi-typescript) make a member with a
// default required, which a request body's member must not be.

/** Spec 4.1: the clip ratios. */
export const RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] as const;
export type Ratio = (typeof RATIOS)[number];
export const RESOLUTIONS = ['480p', '720p', '1080p'] as const satisfies readonly Resolution[];
export const VIDEO_STATUSES = ['pending', 'generating', 'done', 'error', 'cancelled'] as const;
export type VideoStatus = (typeof VIDEO_STATUSES)[number];

/**
 * Model ids of earlier versions, still accepted (spec 4.1 and 9); responses always use the current id.
 * The spec does not list them: these are the resolution-named ids of the 1.0 interface.
 */
export const MODEL_ALIASES: Readonly<Record<string, VideoModel>> = Object.freeze({
  'standard-480p': 'standard',
  'standard-720p': 'standard-hd',
  'standard-1080p': 'standard-fullhd',
  'cinema-480p': 'cinema',
  'cinema-720p': 'cinema-hd',
  'cinema-1080p': 'cinema-fullhd',
});

/** Reference images and asset ids per clip (spec 8). */
export const MAX_CLIP_IMAGES = LIMITS.clipImages;
/** Spec 4.2 and 8: a batch has 1-5 items. */
export const MAX_BATCH_ITEMS = LIMITS.batchItems;
/** Spec 4.1 and 8: callback_url length. */
export const MAX_CALLBACK_URL = LIMITS.callbackUrlChars;
/**
 * The longest prompt (spec: not shown). 2,000 characters: what clip models read, and it bounds what a
 * stranger can make the service store and list.
 */
export const MAX_PROMPT = 2000;

/** Where a clip's reference photos come from (spec 2.2 `asset_source`). */
export const ASSET_SOURCES = ['asset_ids', 'image_urls', 'default_asset_ids', 'none'] as const;
export type AssetSource = (typeof ASSET_SOURCES)[number];

const CLIP_SECONDS = LIMITS.clipSeconds;
/** Spec 8's clip durations in words: `4-15 for standard models, 4-30 for cinema models`. */
export const DURATION_RANGES = `${CLIP_SECONDS.min}-${CLIP_SECONDS.maxStandard} for standard models, ${CLIP_SECONDS.min}-${CLIP_SECONDS.maxCinema} for cinema models`;

/** The error_codes of spec 2.9 that POST /videos/{id}/retry accepts (spec 3.1). */
export const RETRYABLE_ERROR_CODES: ReadonlySet<VideoErrorCode> = new Set(['upstream_busy', 'upstream_unavailable', 'upstream_timeout', 'upstream_error']);

const ALL_MODEL_IDS = [...VIDEO_MODELS, ...Object.keys(MODEL_ALIASES)] as [string, ...string[]];
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/**
 * Reference video or audio (spec 7: "a web-side request for reference video or audio answers 400
 * reference_media_unavailable"): the web app takes them, the API does not. Any value but `null` is refused.
 */
const referenceMedia = (kind: 'video' | 'audio') =>
  rule(z.never(), { code: 'reference_media_unavailable', detail: ({ where }) => `${where}: reference ${kind} is made on the web only; the API takes photos (image_urls, asset_ids).` })
    .nullish()
    .meta({ description: `Reference ${kind}: not offered by the API; any value is refused with 400 reference_media_unavailable.` });

/** What every field of a clip request is, alone (spec 4.1). `null` is taken as absent; unknown members are ignored. */
export const VideoFields = z.object({
  prompt: rule(z.string().max(MAX_PROMPT), { code: 'invalid_parameter' })
    .nullish().meta({ description: `Required unless image_urls, asset_ids or the key's default assets are present. English gives best results. At most ${MAX_PROMPT} characters.` }),
  duration: rule(z.int().min(CLIP_SECONDS.min).max(CLIP_SECONDS.maxCinema), {
    code: 'invalid_duration',
    allowed: (root) => durationsOf(modelOf(root)),
    detail: ({ value, root }) => (typeof value === 'number' && Number.isInteger(value) ? durationSentence(modelOf(root), value) : 'duration must be a whole number of seconds.'),
  }).nullish().meta({ description: `Whole seconds: ${DURATION_RANGES}. Default ${DEFAULT_DURATION}.` }),
  ratio: rule(z.enum(RATIOS), { code: 'invalid_ratio', allowed: RATIOS }).nullish().meta({ description: 'Default 16:9.' }),
  aspect_ratio: rule(z.enum(RATIOS), { code: 'invalid_ratio', allowed: RATIOS }).nullish().meta({ description: 'Alias of ratio; when both are sent they must agree.' }),
  model: rule(z.enum(ALL_MODEL_IDS), { code: 'invalid_model', allowed: VIDEO_MODELS, detail: ({ value }) => `Unknown model ${JSON.stringify(value)}.` })
    .nullish().meta({ description: `One of ${VIDEO_MODELS.join(', ')}. The ids of earlier versions (${Object.keys(MODEL_ALIASES).join(', ')}) are still accepted; responses use the current id. Default standard.` }),
  resolution: rule(z.enum(RESOLUTIONS), { code: 'invalid_resolution', allowed: RESOLUTIONS }).nullish().meta({ description: "Must match the model's tier." }),
  image_urls: rule(z.array(ImageUrl).max(MAX_CLIP_IMAGES), { code: 'invalid_image_url', when: { too_big: 'too_many_images' }, detail: ({ issue, where }) => (issue.code === 'too_big' ? `At most ${MAX_CLIP_IMAGES} reference images per clip.` : `${where}: expected an array of URLs.`) })
    .nullish().meta({ description: `Up to ${MAX_CLIP_IMAGES}; requires subject_consent. asset_ids take priority.` }),
  image_url: ImageUrl.nullish().meta({ deprecated: true, format: 'uri', description: 'Deprecated single form of image_urls.' }),
  subject_consent: SubjectConsentInput.nullish(),
  asset_ids: rule(z.array(z.int().min(1)).max(MAX_CLIP_IMAGES), { code: 'invalid_asset_id', when: { too_big: 'too_many_images' }, detail: ({ issue, where }) => (issue.code === 'too_big' ? `At most ${MAX_CLIP_IMAGES} asset ids per clip.` : `${where}: asset ids are integers >= 1.`) })
    .nullish().meta({ description: `Up to ${MAX_CLIP_IMAGES} of your moderated assets; take priority over image_urls.` }),
  callback_url: rule(z.string().max(MAX_CALLBACK_URL), { code: 'invalid_callback_url', detail: ({ issue }) => (issue.code === 'too_big' ? `callback_url is at most ${MAX_CALLBACK_URL} characters.` : 'callback_url must be a URL.') })
    .nullish().meta({ format: 'uri', description: `HTTPS, at most ${MAX_CALLBACK_URL} characters. Receives the signed webhook when the clip ends.` }),
  video_url: referenceMedia('video'),
  video_urls: referenceMedia('video'),
  audio_url: referenceMedia('audio'),
  audio_urls: referenceMedia('audio'),
});
export type VideoFieldsInput = z.input<typeof VideoFields>;
type Fields = z.output<typeof VideoFields>;

/** A clip request with its aliases resolved: what defaults are applied to, field by canonical field. */
export interface CanonicalVideo {
  prompt?: string | undefined;
  duration?: number | undefined;
  ratio?: Ratio | undefined;
  /** As sent: a current id or an earlier version's. */
  model?: string | undefined;
  resolution?: Resolution | undefined;
  image_urls?: string[] | undefined;
  /** `image_url` was sent (deprecated). */
  imageUrlAlias?: boolean | undefined;
  subject_consent?: SubjectConsent | undefined;
  asset_ids?: number[] | undefined;
  callback_url?: string | undefined;
}

type Issues = z.core.$RefinementCtx;
/** A refusal found while resolving aliases, added as an issue by the schema's refinement. */
type Conflict = { path: PropertyKey[]; message: string; params: ReturnType<typeof cross> };

/** Resolves one request's aliases (ratio/aspect_ratio, image_urls/image_url, the consent alias); two that disagree are refused. */
function canonical(fields: Fields, at: PropertyKey[]): { video: CanonicalVideo; conflicts: Conflict[] } {
  const video: CanonicalVideo = {};
  const conflicts: Conflict[] = [];
  const set = <K extends keyof CanonicalVideo>(key: K, value: CanonicalVideo[K] | null | undefined) => {
    if (value !== null && value !== undefined) video[key] = value;
  };
  set('prompt', fields.prompt);
  set('duration', fields.duration);
  if (fields.ratio != null && fields.aspect_ratio != null && fields.ratio !== fields.aspect_ratio) {
    conflicts.push({ path: [...at, 'aspect_ratio'], message: `ratio (${fields.ratio}) and its alias aspect_ratio (${fields.aspect_ratio}) disagree: send one.`, params: cross('invalid_ratio', { allowed_values: RATIOS }) });
  }
  set('ratio', fields.ratio ?? fields.aspect_ratio);
  set('model', fields.model);
  set('resolution', fields.resolution);
  if (fields.image_url != null) {
    // The deprecated singular form adds its URL to image_urls (spec 9).
    const urls = fields.image_urls ?? [];
    video.image_urls = urls.includes(fields.image_url) ? urls : [...urls, fields.image_url];
    video.imageUrlAlias = true;
  } else set('image_urls', fields.image_urls);
  set('subject_consent', fields.subject_consent == null ? undefined : canonicalConsent(fields.subject_consent));
  set('asset_ids', fields.asset_ids);
  set('callback_url', fields.callback_url);
  return { video, conflicts };
}

const report = (ctx: Issues, conflicts: readonly Conflict[]) => {
  for (const conflict of conflicts) ctx.addIssue({ code: 'custom', ...conflict });
};

/** The rules of spec 4.1 that span fields, on a canonical request (after a batch's defaults). */
function spanningRules(video: CanonicalVideo, ctx: Issues, at: PropertyKey[]): void {
  const model = currentModel(video.model);
  const spec = MODEL_SPECS[model];
  const duration = video.duration ?? DEFAULT_DURATION;
  if (duration < spec.minDuration || duration > spec.maxDuration) {
    ctx.addIssue({ code: 'custom', path: [...at, 'duration'], message: durationSentence(model, duration), params: cross('invalid_duration', { allowed_values: durationsOf(model) }) });
  }
  if (video.resolution !== undefined && video.resolution !== spec.resolution) {
    const match = VIDEO_MODELS.filter((id) => MODEL_SPECS[id].family === spec.family && MODEL_SPECS[id].resolution === video.resolution);
    ctx.addIssue({ code: 'custom', path: [...at, 'resolution'], message: `${model} renders ${spec.resolution}; for ${video.resolution} use ${match.join(' or ')}.`, params: cross('resolution_model_mismatch', { allowed_values: [spec.resolution] }) });
  }
  const urls = video.image_urls ?? [];
  if (urls.length > MAX_CLIP_IMAGES) ctx.addIssue({ code: 'custom', path: [...at, 'image_urls'], message: `At most ${MAX_CLIP_IMAGES} reference images per clip.`, params: cross('too_many_images') });
  // asset_ids take priority over image_urls (spec 4.1), and need no consent (recommended only).
  if (urls.length > 0 && (video.asset_ids ?? []).length === 0 && video.subject_consent === undefined) {
    ctx.addIssue({ code: 'custom', path: [...at, 'subject_consent'], message: 'image_urls need subject_consent: self, permission or no_real_person.', params: cross('consent_required') });
  }
}

/** POST /videos (spec 4.1): the body, checked field by field and across fields, with its aliases resolved. */
export const VideoRequest = VideoFields.superRefine((fields, ctx) => {
  const { video, conflicts } = canonical(fields, []);
  report(ctx, conflicts);
  spanningRules(video, ctx, []);
}).transform((fields) => canonical(fields, []).video);
export type VideoRequestInput = z.input<typeof VideoRequest>;

/** POST /videos/batch (spec 4.2): 1-5 items and `defaults`, which fill what an item leaves out, by canonical field. */
export const BatchRequest = z
  .object({
    items: rule(z.array(VideoFields).min(1).max(MAX_BATCH_ITEMS), {
      code: 'invalid_parameter',
      when: { too_big: 'batch_too_large' },
      detail: ({ issue, value }) => (issue.code === 'too_big' ? `A batch has at most ${MAX_BATCH_ITEMS} items, got ${Array.isArray(value) ? value.length : 'more'}.` : `items is an array of 1-${MAX_BATCH_ITEMS} clip requests.`),
    }).meta({ description: `1-${MAX_BATCH_ITEMS} clip requests, each with the fields of POST /videos.` }),
    defaults: VideoFields.nullish().meta({ description: 'Fields applied to any item that omits them (after each item’s aliases are resolved).' }),
  })
  .superRefine((body, ctx) => {
    const { items, conflicts } = mergedItems(body);
    report(ctx, conflicts);
    for (const [index, item] of items.entries()) spanningRules(item, ctx, ['items', index]);
  })
  .transform((body) => mergedItems(body).items);
export type BatchRequestInput = z.input<typeof BatchRequest>;

/** Each item with `defaults` under what it leaves out: aliases resolved on both sides first, so an item's aspect_ratio beats the defaults' ratio. */
function mergedItems(body: { items: Fields[]; defaults?: Fields | null | undefined }): { items: CanonicalVideo[]; conflicts: Conflict[] } {
  const defaults = body.defaults ? canonical(body.defaults, ['defaults']) : { video: {}, conflicts: [] };
  const conflicts = [...defaults.conflicts];
  const items = body.items.map((fields, index) => {
    const item = canonical(fields, ['items', index]);
    conflicts.push(...item.conflicts);
    return { ...defaults.video, ...item.video };
  });
  return { items, conflicts };
}

/** A clip request, checked, with its defaults applied: what the clip command runs. */
export interface VideoCommand {
  prompt: string;
  duration: number;
  ratio: Ratio;
  model: VideoModel;
  resolution: Resolution;
  /** The URLs as sent (spec 2.2 `image_urls`), `image_url` folded in. */
  imageUrls: string[];
  /** The asset ids named by `asset://` URIs in `imageUrls`, in order. */
  assetUris: number[];
  assetIds: number[] | null;
  assetSource: AssetSource;
  subjectConsent: SubjectConsent | null;
  callbackUrl: string | null;
  warnings: Array<{ code: string; detail: string }>;
}

/** What a clip's command needs beyond its body: the key's default assets, and the callback URL's safety check. */
export interface VideoContext {
  /** The key's default assets (account settings), used when neither image_urls nor asset_ids is sent (spec 4.1). */
  defaultAssetIds: readonly number[];
  /** Checks a callback URL (https, no private address under --strict): its form to keep, and a warning; throws the refusal. */
  callback?: (url: string) => { url: string; warning?: { code: string; detail: string } };
}

/**
 * The command of a canonical request, in the order of spec 4.1's table: the model's current id, the
 * deprecated members, the callback, then 400 missing_input for a request of nothing.
 * @example videoCommand(VideoRequest.parse({ prompt: 'a fox', model: 'cinema-720p' }), { defaultAssetIds: [] }) // { model: 'cinema-hd', warnings: [{ code: 'model_id_deprecated', … }], … }
 */
export function videoCommand(video: CanonicalVideo, { defaultAssetIds, callback }: VideoContext): VideoCommand {
  const warnings: VideoCommand['warnings'] = [];
  const model = currentModel(video.model);
  if (video.model !== undefined && video.model !== model) warnings.push({ code: 'model_id_deprecated', detail: `${video.model} is the id of an earlier version; responses use ${model}: send that.` });
  if (video.imageUrlAlias) warnings.push({ code: 'image_url_deprecated', detail: 'image_url is deprecated; send image_urls (an array).' });
  let callbackUrl: string | null = null;
  if (video.callback_url !== undefined) {
    const checked = callback ? callback(video.callback_url) : { url: video.callback_url };
    callbackUrl = checked.url;
    if (checked.warning) warnings.push(checked.warning);
  }
  const imageUrls = video.image_urls ?? [];
  const assetIds = video.asset_ids ?? null;
  const assetSource: AssetSource =
    assetIds !== null && assetIds.length > 0 ? 'asset_ids'
    : imageUrls.length > 0 ? 'image_urls'
    : defaultAssetIds.length > 0 ? 'default_asset_ids'
    : 'none';
  const prompt = video.prompt ?? '';
  if (prompt.trim() === '' && assetSource === 'none') throw new ServiceError('missing_input', 'Send a prompt, image_urls or asset_ids (or set default assets on the key).');
  const subjectConsent = video.subject_consent ?? null;
  if (assetSource === 'asset_ids' && subjectConsent === null) warnings.push({ code: 'subject_consent_missing', detail: 'asset_ids were sent without subject_consent; it is recommended and may become required.' });
  return {
    prompt, duration: video.duration ?? DEFAULT_DURATION, ratio: video.ratio ?? '16:9', model, resolution: MODEL_SPECS[model].resolution,
    imageUrls, assetUris: imageUrls.map(assetUriId).filter((id): id is number => id !== null), assetIds, assetSource, subjectConsent, callbackUrl, warnings,
  };
}

function currentModel(id: string | undefined): VideoModel {
  if (id === undefined) return 'standard';
  return isVideoModel(id) ? id : (MODEL_ALIASES[id] ?? 'standard');
}

function modelOf(root: unknown): VideoModel {
  const model = (root as { model?: unknown } | null)?.model;
  return typeof model === 'string' ? currentModel(model) : 'standard';
}

function durationsOf(model: VideoModel): number[] {
  return range(MODEL_SPECS[model].minDuration, MODEL_SPECS[model].maxDuration);
}

function durationSentence(model: VideoModel, seconds: number): string {
  const { minDuration, maxDuration } = MODEL_SPECS[model];
  return `${model} clips last ${minDuration}-${maxDuration} whole seconds, got ${seconds}.`;
}

/** Spec 4.3 and 8: the video list pages 1-100 clips, 20 by default. */
export const VIDEO_PAGE = LIMITS.videoPage;

/** GET /videos (spec 4.3). */
export const VideoListQuery = z.object({
  limit: queryInteger('limit', { min: VIDEO_PAGE.min, max: VIDEO_PAGE.max, fallback: VIDEO_PAGE.default }),
  offset: queryInteger('offset', { min: 0, fallback: 0 }),
  status: queryEnum('status', VIDEO_STATUSES),
});

/** The same page as JSON members (the assistant's list_clips): numbers, not query text. */
export const VideoListFields = z.object({
  limit: rule(z.int().min(VIDEO_PAGE.min).max(VIDEO_PAGE.max), { code: 'invalid_parameter', detail: () => `limit is an integer from ${VIDEO_PAGE.min} to ${VIDEO_PAGE.max}.` }).optional().meta({ description: `Default ${VIDEO_PAGE.default}.` }),
  offset: rule(z.int().min(0), { code: 'invalid_parameter', detail: () => 'offset is an integer >= 0.' }).optional(),
  status: rule(z.enum(VIDEO_STATUSES), { code: 'invalid_parameter', allowed: VIDEO_STATUSES }).optional(),
});
export const VideoPath = z.object({ id: pathId('video') });
