// Section 8 of the spec (and the numbers of 5.7 and 2.9 it restates), as data: every other part of the
// service, the tool descriptions, the route summaries and docs/service.md's limits table read them here.
// test/service/contract/literals.test.ts fails on a copy of one outside contract/, so each is said once.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** A day in milliseconds, to say a limit in days (`LIMITS.signedLinkMs / DAY_MS`). */
export const DAY_MS = DAY;

/** A page size: the smallest, the largest and the default (spec 8 "page size"). */
export interface PageSize {
  readonly min: number;
  readonly max: number;
  readonly default: number;
}

/** A wait the spec gives as a range, in milliseconds ("5-60 s"). */
export type MsRange = readonly [from: number, to: number];

/**
 * The limits of the spec, one member each, with the spec's words beside it. Durations are in
 * milliseconds (`…Ms`) or seconds (`…Seconds`), sizes in bytes or characters, as their names say.
 * @example `At most ${LIMITS.keysPerAccount} keys` // 'At most 5 keys'
 */
export const LIMITS = Object.freeze({
  /** "Requests per API key: 60 per minute; 429 rate_limit_exceeded with Retry-After". */
  requestsPerWindow: 60,
  rateWindowMs: MINUTE,
  /** "API keys per account: 5". */
  keysPerAccount: 5,
  /** "Minimum balance for keys to work: 10 credits" (spec 5.3: below it every keyed call is 402). */
  minBalanceForKeys: 10,
  /** "… 240 credits to unlock keys" (spec 5.2: creating or unlocking a key). */
  minBalanceToCreateKeys: 240,
  /** "Clip duration: standard models 4-15 s; cinema models 4-30 s; default 5". */
  clipSeconds: Object.freeze({ min: 4, maxStandard: 15, maxCinema: 30, default: 5 }),
  /** "Reference images per clip: 5". */
  clipImages: 5,
  /** "Images per image request: 3". */
  imagePhotos: 3,
  /** "Batch size: 1-5 items". */
  batchItems: 5,
  /** "callback_url length: 2048 characters" (an image_urls entry is bounded alike). */
  callbackUrlChars: 2048,
  /** "Idempotency-Key: 1-255 printable ASCII characters; replay window 24 hours". */
  idempotencyKeyChars: 255,
  idempotencyWindowMs: DAY,
  /** "Asset file size: 20 MB", read as MiB (20,971,520 bytes); types jpg, png, webp, gif, heic. */
  assetBytes: 20 * 1024 * 1024,
  /** "Asset moderation time: 5-60 s". */
  assetModerationMs: Object.freeze([5 * SECOND, 60 * SECOND]) as MsRange,
  /** "External photo moderation wait: about 40 s, then 503 moderation_pending". */
  photoModerationWaitMs: 40 * SECOND,
  /** "Signed link validity: 7 days". */
  signedLinkMs: 7 * DAY,
  /** "Image description: up to 1000 characters; text up to 60 characters". */
  imageDescriptionChars: 1000,
  imageTextChars: 60,
  /** "Image list page size 1-50 (default 20); video list 1-100 (default 20); asset list 1-100 (default 50)". */
  imagePage: Object.freeze({ min: 1, max: 50, default: 20 }) as PageSize,
  videoPage: Object.freeze({ min: 1, max: 100, default: 20 }) as PageSize,
  assetPage: Object.freeze({ min: 1, max: 100, default: 50 }) as PageSize,
  /** "GET /images/{id} wait: 0-30 s". */
  imageWaitSeconds: 30,
  /** "Concurrent image jobs per account: 3 (429 concurrency_limit)". */
  concurrentImageJobs: 3,
  /** "Image jobs: 30 per 10 minutes (429 rate_limited)". */
  imageJobsPerWindow: 30,
  imageJobWindowMs: 10 * MINUTE,
  /** "Character trusted photo validity: 30 days". */
  characterTrustMs: 30 * DAY,
  /** Spec 2.9: `upstream_timeout` is generation exceeding "a 10-minute polling time-out". */
  generationTimeoutMs: 10 * MINUTE,
  /**
   * "Assistant endpoint: default daily limit 30 credits (10 before first top-up); 3 concurrent clips", and
   * spec 5.7: a repeat within 2 minutes is never charged twice; get_clip and create_image wait up to 45 s.
   */
  assistant: Object.freeze({
    dailyLimit: 30,
    dailyLimitBeforeTopUp: 10,
    dailyWindowMs: DAY,
    concurrentClips: 3,
    repeatWindowMs: 2 * MINUTE,
    toolWaitSeconds: 45,
  }),
  /** "Maximum request body size for body_too_large: not shown" — ours: 1 MiB of JSON. */
  jsonBodyBytes: 1024 * 1024,
});

/** Spec 9: the interface description version (the OpenAPI document's `info.version`, the MCP server's version). */
export const API_VERSION = '1.1.0';
