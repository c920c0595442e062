import { z } from 'zod';
import type { ProblemCode } from '../../protocol/problem.js';
import { checkCallbackUrl } from '../../emitter/index.js';
import { MAX_IMAGE_URL } from '../contract/common.js';
import { MAX_PROMPT } from '../contract/videos.js';
import { DEFAULT_DURATION, isVideoModel, MODEL_SPECS, VIDEO_MODELS, type Resolution, type VideoModel } from '../contract/pricing.js';

/** Spec 4.1: the clip ratios. */
export const RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] as const;
export type Ratio = (typeof RATIOS)[number];

export const RESOLUTIONS = ['480p', '720p', '1080p'] as const;

/** Spec 5, consent rules; `third_party_with_permission` is the alias of `permission` kept by spec 9. */
export const SUBJECT_CONSENTS = ['self', 'permission', 'no_real_person'] as const;
export type SubjectConsent = (typeof SUBJECT_CONSENTS)[number];

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

/** Reference images per clip and asset ids per clip (spec 8). */
export const MAX_CLIP_IMAGES = 5;

// The longest clip prompt, in characters as sent (spec 4.1 names none; issue 20 item 11: 100 prompts of
// 900 KiB made a 264 MiB data file and an 88 MiB list page), and the longest image_urls entry: the contract's.
export { MAX_PROMPT } from '../contract/videos.js';
export { MAX_IMAGE_URL as MAX_IMAGE_URL_LENGTH } from '../contract/common.js';

/** Where a clip's reference photos come from (spec 2.2 `asset_source`). */
export type AssetSource = 'asset_ids' | 'image_urls' | 'default_asset_ids' | 'none';

export interface Warning {
  code: string;
  detail: string;
}

/** A POST /videos body (or one batch item), checked and with its defaults applied. */
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
  warnings: Warning[];
}

/** Why a body was refused: a problem code of spec section 7, a sentence, and the code's extra members. */
export interface Refusal {
  code: ProblemCode;
  detail: string;
  extra?: Record<string, unknown>;
}

export type Validated<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

export interface ValidateOptions {
  /**
   * `--strict`: callback URLs are https only and may not name a private address (spec 4.1). Otherwise
   * http is also taken for loopback hosts, so a local receiver or relay can be the callback.
   */
  strict: boolean;
  /** The key's default assets (account settings), used when neither image_urls nor asset_ids is sent. */
  defaultAssetIds: readonly number[];
}

const nullish = <T extends z.ZodType>(schema: T) => schema.nullish();

/**
 * The body of POST /videos, declared once (spec 4.1): the types derive from it and its failures map onto
 * the spec's codes in `FIELD_CODES`. Unknown members are ignored, as the service ignores them.
 */
export const VideoBody = z.object({
  prompt: nullish(z.string()),
  duration: nullish(z.number().int()),
  ratio: nullish(z.enum(RATIOS)),
  aspect_ratio: nullish(z.enum(RATIOS)),
  model: nullish(z.string()),
  resolution: nullish(z.enum(RESOLUTIONS)),
  image_urls: nullish(z.array(z.string()).max(MAX_CLIP_IMAGES)),
  image_url: nullish(z.string()),
  subject_consent: nullish(z.enum([...SUBJECT_CONSENTS, 'third_party_with_permission'])),
  asset_ids: nullish(z.array(z.number().int().positive()).max(MAX_CLIP_IMAGES)),
  callback_url: nullish(z.string()),
});
export type VideoBodyInput = z.input<typeof VideoBody>;

type Field = keyof z.infer<typeof VideoBody>;

/** Each field's code when its value has the wrong type or is not an allowed value; `too_big` arrays differ. */
const FIELD_CODES: Record<Field, ProblemCode> = {
  prompt: 'invalid_json',
  duration: 'invalid_duration',
  ratio: 'invalid_ratio',
  aspect_ratio: 'invalid_ratio',
  model: 'invalid_model',
  resolution: 'invalid_resolution',
  image_urls: 'invalid_image_url',
  image_url: 'invalid_image_url',
  subject_consent: 'invalid_subject_consent',
  asset_ids: 'invalid_asset_id',
  callback_url: 'invalid_callback_url',
};

/** Allowed values a refusal lists (spec 7: "body lists allowed values"). */
const ALLOWED: Partial<Record<Field, readonly unknown[]>> = {
  ratio: RATIOS,
  aspect_ratio: RATIOS,
  model: VIDEO_MODELS,
  resolution: RESOLUTIONS,
  subject_consent: SUBJECT_CONSENTS,
};

/**
 * Checks one clip request body against every rule of spec 4.1 that needs no I/O, in the order of its
 * table, and applies the defaults. Asset ownership, image downloads and prices are the caller's.
 * @example validateVideo({ prompt: 'a fox', duration: 10 }, { strict: false, defaultAssetIds: [] })
 */
export function validateVideo(body: unknown, options: ValidateOptions): Validated<VideoCommand> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return refuse('invalid_json', 'The body must be a JSON object.');
  }
  const parsed = VideoBody.safeParse(body);
  if (!parsed.success) return refuseIssue(parsed.error.issues[0]!);
  const input = parsed.data;
  const warnings: Warning[] = [];

  // Counted as sent: the prompt is kept and answered as it was sent (spec 2.1), whitespace and all.
  if (input.prompt != null && input.prompt.length > MAX_PROMPT) return refuse('invalid_json', `prompt is ${input.prompt.length} characters; the limit is ${MAX_PROMPT}.`);

  const model = input.model == null ? 'standard' : isVideoModel(input.model) ? input.model : MODEL_ALIASES[input.model];
  if (model === undefined) return refuse('invalid_model', `Unknown model ${JSON.stringify(input.model)}.`, { allowed_values: VIDEO_MODELS });
  if (input.model != null && input.model !== model) {
    warnings.push({ code: 'model_id_deprecated', detail: `${input.model} is the id of an earlier version; responses use ${model}: send that.` });
  }
  const spec = MODEL_SPECS[model];

  const duration = input.duration ?? DEFAULT_DURATION;
  if (duration < spec.minDuration || duration > spec.maxDuration) {
    return refuse('invalid_duration', `${model} clips last ${spec.minDuration}-${spec.maxDuration} whole seconds, got ${duration}.`, {
      allowed_values: range(spec.minDuration, spec.maxDuration),
    });
  }

  if (input.ratio != null && input.aspect_ratio != null && input.ratio !== input.aspect_ratio) {
    return refuse('invalid_ratio', `ratio (${input.ratio}) and its alias aspect_ratio (${input.aspect_ratio}) disagree: send one.`, { allowed_values: RATIOS });
  }
  const ratio = input.ratio ?? input.aspect_ratio ?? '16:9';

  if (input.resolution != null && input.resolution !== spec.resolution) {
    const match = VIDEO_MODELS.filter((id) => MODEL_SPECS[id].family === spec.family && MODEL_SPECS[id].resolution === input.resolution);
    return refuse('resolution_model_mismatch', `${model} renders ${spec.resolution}; for ${input.resolution} use ${match.join(' or ')}.`, {
      allowed_values: [spec.resolution],
    });
  }

  let imageUrls = input.image_urls ?? [];
  if (input.image_url != null) {
    warnings.push({ code: 'image_url_deprecated', detail: 'image_url is deprecated; send image_urls (an array).' });
    if (input.image_urls == null) imageUrls = [input.image_url];
    else if (!imageUrls.includes(input.image_url)) imageUrls = [...imageUrls, input.image_url];
    if (imageUrls.length > MAX_CLIP_IMAGES) return refuse('too_many_images', `At most ${MAX_CLIP_IMAGES} reference images per clip.`);
  }
  const assetUris: number[] = [];
  for (const [index, url] of imageUrls.entries()) {
    const checked = checkImageUrl(url);
    if (typeof checked === 'string') return refuse('invalid_image_url', `image_urls[${index}]: ${checked}`);
    if (checked !== null) assetUris.push(checked);
  }

  const subjectConsent = input.subject_consent == null ? null : input.subject_consent === 'third_party_with_permission' ? 'permission' : input.subject_consent;
  const assetIds = input.asset_ids ?? null;

  let callbackUrl: string | null = null;
  if (input.callback_url != null) {
    const checked = checkCallback(input.callback_url, options.strict);
    if (checked.ok === false) return checked;
    callbackUrl = checked.value;
    // Taken here for local development; the real service would refuse it (spec 4.1): say so now.
    if (callbackUrl.startsWith('http:')) warnings.push({ code: 'callback_url_not_https', detail: 'The real service takes https callback URLs only; cliphook serve --strict refuses this one.' });
  }

  const assetSource: AssetSource =
    assetIds !== null && assetIds.length > 0 ? 'asset_ids'
    : imageUrls.length > 0 ? 'image_urls'
    : options.defaultAssetIds.length > 0 ? 'default_asset_ids'
    : 'none';
  const prompt = input.prompt?.trim() ?? '';
  if (prompt === '' && assetSource === 'none') return refuse('missing_input', 'Send a prompt, image_urls or asset_ids (or set default assets on the key).');
  if (assetSource === 'image_urls' && subjectConsent === null) {
    return refuse('consent_required', 'image_urls need subject_consent: self, permission or no_real_person.');
  }
  if (assetSource === 'asset_ids' && subjectConsent === null) {
    warnings.push({ code: 'subject_consent_missing', detail: 'asset_ids were sent without subject_consent; it is recommended and may become required.' });
  }

  return {
    ok: true,
    value: { prompt: input.prompt ?? '', duration, ratio, model, resolution: spec.resolution, imageUrls, assetUris, assetIds, assetSource, subjectConsent, callbackUrl, warnings },
  };
}

/** `null` for a public http(s) URL, the asset id of an `asset://<id>` URI, or why the URL is refused. */
export function checkImageUrl(url: string): number | null | string {
  const asset = /^asset:\/\/(\d{1,15})$/.exec(url);
  if (asset) return Number(asset[1]) >= 1 ? Number(asset[1]) : 'asset ids start at 1.';
  if (url.startsWith('asset:')) return 'an asset URI is asset://<asset id>.';
  if (url.length > MAX_IMAGE_URL) return `longer than ${MAX_IMAGE_URL} characters.`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not an absolute URL.';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return `must be http(s) or asset://, got ${parsed.protocol.slice(0, -1)}.`;
  if (parsed.username || parsed.password) return 'must not carry credentials.';
  return null;
}

function checkCallback(url: string, strict: boolean): Validated<string> {
  try {
    const parsed = checkCallbackUrl(url, { allowPrivateNetworks: !strict });
    if (!strict && parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname)) {
      return refuse('invalid_callback_url', 'callback_url must be https; plain http is taken only for a loopback host (localhost, 127.0.0.1, [::1]).');
    }
    return { ok: true, value: parsed.href };
  } catch (error) {
    // The emitter's sentences name its library option; here the switch is the service's --strict.
    const detail = (error as Error).message.replace(' (http only with `allowPrivateNetworks`)', '').replace('; allow it with `allowPrivateNetworks`', '');
    return refuse('invalid_callback_url', detail.replace(/^The callback URL/, 'callback_url'));
  }
}

/** localhost, *.localhost, 127.0.0.0/8 and ::1. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

function refuseIssue(issue: z.core.$ZodIssue): { ok: false; refusal: Refusal } {
  const field = issue.path[0] as Field;
  const code = issue.code === 'too_big' && (field === 'image_urls' || field === 'asset_ids') ? 'too_many_images' : FIELD_CODES[field];
  const allowed = ALLOWED[field];
  const detail =
    code === 'too_many_images' ? `At most ${MAX_CLIP_IMAGES} ${field === 'asset_ids' ? 'asset ids' : 'reference images'} per clip.`
    : field === 'duration' ? 'duration must be a whole number of seconds.'
    : `${issue.path.join('.')}: ${allowed ? `must be one of ${allowed.join(', ')}` : describeIssue(issue)}.`;
  return refuse(code, detail, allowed ? { allowed_values: allowed } : undefined);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return `expected ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}`;
  if (issue.code === 'too_small') return 'must be positive';
  return issue.message;
}

function refuse(code: ProblemCode, detail: string, extra?: Record<string, unknown>): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: extra ? { code, detail, extra } : { code, detail } };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
