import { InvalidPayloadError } from './errors.js';

/** Why a clip failed (spec 2.9). Build on this, not on the `error` sentence, whose text may change. */
export type VideoErrorCode =
  | 'image_fetch_failed'
  | 'content_rejected'
  | 'copyright_rejected'
  | 'output_rejected'
  | 'real_person_rejected'
  | 'task_config_error'
  | 'upstream_busy'
  | 'upstream_unavailable'
  | 'upstream_timeout'
  | 'upstream_auth_failed'
  | 'upstream_bad_request'
  | 'upstream_error'
  | 'cancelled';

/** Every value of spec 2.9, in the spec's order. */
export const VIDEO_ERROR_CODES: readonly VideoErrorCode[] = Object.freeze([
  'image_fetch_failed', 'content_rejected', 'copyright_rejected', 'output_rejected', 'real_person_rejected',
  'task_config_error', 'upstream_busy', 'upstream_unavailable', 'upstream_timeout', 'upstream_auth_failed',
  'upstream_bad_request', 'upstream_error', 'cancelled',
]);

/** Fields every clip webhook carries (spec 2.12). */
interface VideoEventBase {
  /** The clip's id, as in GET /videos/{id}. */
  id: number;
  prompt: string | null;
  credits_used: number;
  duration: number | null;
  model: string | null;
  created_at: string | null;
  completed_at: string | null;
  /** When this attempt was sent; differs between attempts of one delivery. */
  delivered_at: string;
}

/** A clip finished: `video_url` is set. */
export interface VideoCompletedEvent extends VideoEventBase {
  event: 'video.completed';
  status: 'done';
  video_url: string;
  error: null;
  error_code: null;
}

/** A clip failed: `error_code` says why; credits were refunded. */
export interface VideoFailedEvent extends VideoEventBase {
  event: 'video.failed';
  status: 'error';
  video_url: null;
  error: string | null;
  error_code: VideoErrorCode;
}

/** The `error` sentence that goes with each `error_code` of spec 2.9 in a `video.failed` event (for `trigger` and test events). */
export const ERROR_SENTENCES: Readonly<Record<VideoErrorCode, string>> = Object.freeze({
  image_fetch_failed: 'One of the images could not be downloaded. Upload it as an asset and use asset_ids instead.',
  content_rejected: 'The request was rejected by content moderation. Change the prompt or images and try again.',
  copyright_rejected: 'The request looks like copyrighted material. Change the prompt or images and try again.',
  output_rejected: 'The generated clip did not pass moderation. Change the prompt and try again.',
  real_person_rejected: 'The images show a real person without consent. Use other images or confirm consent.',
  task_config_error: 'The combination of settings is not supported. Change the model, duration or ratio.',
  upstream_busy: 'The generation service is busy right now. Nothing was charged; try again in a few minutes.',
  upstream_unavailable: 'The generation service is unavailable right now. Nothing was charged; one retry is allowed.',
  upstream_timeout: 'Generation took longer than 10 minutes and was stopped. Nothing was charged; one retry is allowed.',
  upstream_auth_failed: 'The generation service refused our credentials. Contact support; do not retry.',
  upstream_bad_request: 'The generation service refused the request. Check the settings and try again.',
  upstream_error: 'The generation service failed. Nothing was charged; one retry is allowed.',
  cancelled: 'The clip was cancelled before it finished. Nothing was charged.',
});

/** The webhook body of spec 2.12, discriminated on `event`. */
export type WebhookEvent = VideoCompletedEvent | VideoFailedEvent;
export type WebhookEventName = WebhookEvent['event'];
/** The event type for one event name. */
export type EventOf<N extends WebhookEventName> = Extract<WebhookEvent, { event: N }>;

/** The names of the events the service sends. */
export const WEBHOOK_EVENTS: readonly WebhookEventName[] = Object.freeze(['video.completed', 'video.failed']);

type Json = Record<string, unknown>;
type Check = (value: unknown) => boolean;

const isString: Check = (v) => typeof v === 'string';
const isStringOrNull: Check = (v) => v === null || typeof v === 'string';
const isIntOrNull: Check = (v) => v === null || Number.isSafeInteger(v);
const isNonNegativeInt: Check = (v) => Number.isSafeInteger(v) && (v as number) >= 0;
const isPositiveInt: Check = (v) => Number.isSafeInteger(v) && (v as number) >= 1;
const isDate: Check = (v) => typeof v === 'string' && !Number.isNaN(Date.parse(v));
const isDateOrNull: Check = (v) => v === null || isDate(v);

type Rules = readonly (readonly [field: string, ok: Check, expected: string])[];
const rules = (table: Record<string, [Check, string]>): Rules => Object.entries(table).map(([field, [ok, expected]]) => [field, ok, expected] as const);

const BASE = rules({
  id: [isPositiveInt, 'a positive integer'],
  prompt: [isStringOrNull, 'a string or null'],
  credits_used: [isNonNegativeInt, 'a non-negative integer'],
  duration: [isIntOrNull, 'an integer or null'],
  model: [isStringOrNull, 'a string or null'],
  created_at: [isDateOrNull, 'an ISO 8601 date-time or null'],
  completed_at: [isDateOrNull, 'an ISO 8601 date-time or null'],
  delivered_at: [isDate, 'an ISO 8601 date-time'],
});

const BY_EVENT: Record<WebhookEventName, Rules> = {
  'video.completed': rules({
    status: [(v) => v === 'done', '"done"'],
    video_url: [isString, 'a string'],
    error: [(v) => v === null || v === undefined, 'null'],
    error_code: [(v) => v === null || v === undefined, 'null'],
  }),
  'video.failed': rules({
    status: [(v) => v === 'error', '"error"'],
    video_url: [(v) => v === null || v === undefined, 'null'],
    error: [(v) => v === undefined || isStringOrNull(v), 'a string or null'],
    // Unknown codes pass, so a code the service adds later is not refused forever (a 4xx is permanent).
    error_code: [isString, 'one of the error codes of spec 2.9'],
  }),
};

/** True when `name` is an event this version knows. */
export function isWebhookEventName(name: unknown): name is WebhookEventName {
  return name === 'video.completed' || name === 'video.failed';
}

/**
 * Checks that a parsed JSON value has the shape of spec 2.12 and returns it typed. Unknown members are
 * kept (forward compatibility). Throws `InvalidPayloadError` naming the first bad field; never anything else.
 */
export function parseEvent(value: unknown): WebhookEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidPayloadError('', 'The webhook body must be a JSON object.');
  }
  const body = value as Json;
  if (!isWebhookEventName(body.event)) {
    throw new InvalidPayloadError('event', `\`event\` must be one of ${WEBHOOK_EVENTS.join(', ')}, got ${show(body.event)}.`);
  }
  check(body, BASE);
  check(body, BY_EVENT[body.event]);
  return body as unknown as WebhookEvent;
}

function check(body: Json, list: Rules): void {
  for (const [field, ok, expected] of list) {
    if (!ok(body[field])) {
      throw new InvalidPayloadError(field, `\`${field}\` must be ${expected}, got ${show(body[field])}.`);
    }
  }
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object';
  // Only scalars are printed, so a hostile, deeply nested body cannot overflow the stack here.
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
