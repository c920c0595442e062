import { LIMITS } from './limits.js';

/**
 * The price tables of spec 2.13, pure: what a clip or an image costs through the API (10% off the base
 * price) and through the assistant endpoint (base price, spec section 5.7). Every other part asks here.
 */

/** The current model ids of spec 4.1, in the order of the 2.13 table. */
export const VIDEO_MODELS = ['standard', 'standard-hd', 'standard-fullhd', 'cinema', 'cinema-hd', 'cinema-fullhd'] as const;
export type VideoModel = (typeof VIDEO_MODELS)[number];

export type ModelFamily = 'standard' | 'cinema';
export type Resolution = '480p' | '720p' | '1080p';

export interface ModelSpec {
  family: ModelFamily;
  /** The one resolution the model renders (spec 4.1: `resolution` must match the model's tier). */
  resolution: Resolution;
  /** Base credits per second, before the API discount. */
  perSecond: number;
  /** Whole seconds, inclusive (spec 4.1 and 8). */
  minDuration: number;
  maxDuration: number;
}

const family = (name: ModelFamily, resolution: Resolution, perSecond: number): ModelSpec => ({
  family: name,
  resolution,
  perSecond,
  minDuration: LIMITS.clipSeconds.min,
  maxDuration: name === 'standard' ? LIMITS.clipSeconds.maxStandard : LIMITS.clipSeconds.maxCinema,
});

/** Spec 2.13, row by row. */
export const MODEL_SPECS: Readonly<Record<VideoModel, ModelSpec>> = Object.freeze({
  standard: family('standard', '480p', 2),
  'standard-hd': family('standard', '720p', 4),
  'standard-fullhd': family('standard', '1080p', 10),
  cinema: family('cinema', '480p', 3),
  'cinema-hd': family('cinema', '720p', 6),
  'cinema-fullhd': family('cinema', '1080p', 15),
});

/** The API discount of spec 2.13, as a fraction; kept as tenths so prices are exact integers. */
export const API_DISCOUNT = 0.1;
const API_TENTHS = 9;

/** The default clip duration in seconds (spec 4.1). */
export const DEFAULT_DURATION = LIMITS.clipSeconds.default;

export function isVideoModel(value: unknown): value is VideoModel {
  return typeof value === 'string' && Object.hasOwn(MODEL_SPECS, value);
}

/**
 * Credits a clip costs through `/v1`: `ceil(per second × seconds × 0.9)`, in integers (in floating
 * point 2 × 5 × 0.9 is 9.000000000000002, whose ceiling would be 10).
 * @example clipPrice('cinema', 5) // 14
 */
export function clipPrice(model: VideoModel, seconds: number): number {
  const base = MODEL_SPECS[model].perSecond * seconds;
  return Math.ceil((base * API_TENTHS) / 10);
}

/**
 * Credits a clip costs through the assistant endpoint: the base price, no discount (spec 5.7).
 * @example assistantClipPrice('standard-hd', 5) // 20
 */
export function assistantClipPrice(model: VideoModel, seconds: number): number {
  return MODEL_SPECS[model].perSecond * seconds;
}

export type ImageQuality = 'standard' | 'hd';

/** Image prices of spec 2.13, in credits. */
export const IMAGE_PRICES = Object.freeze({
  standard: Object.freeze({ 1: 2, 4: 7 }),
  hd: Object.freeze({ 1: 4, 4: 14 }),
  /** An AI character: 4 photos of one made-up adult. */
  character: 5,
});

/** Megapixels an image is made at (spec 2.13: "about"). */
export const IMAGE_MEGAPIXELS: Readonly<Record<ImageQuality, number>> = Object.freeze({ standard: 2.4, hd: 4.2 });

/**
 * Credits an image job reserves. A character is priced as one job whatever the quality.
 * @example imagePrice({ type: 'image', quality: 'hd', count: 4 }) // 14
 */
export function imagePrice({ type, quality, count }: { type: 'image' | 'character'; quality: ImageQuality; count: 1 | 4 }): number {
  return type === 'character' ? IMAGE_PRICES.character : IMAGE_PRICES[quality][count];
}

/**
 * The price of each image of a job that ends with `made` of `count` images: the job's price shared out,
 * rounded so the parts add up to the whole (7 credits for 4 → 2, 2, 2, 1). `partial` jobs charge the parts made.
 * @example imageCharge(7, 4, 3) // 6
 */
export function imageCharge(reserved: number, count: number, made: number): number {
  if (made >= count) return reserved;
  const base = Math.floor(reserved / count);
  const extra = reserved % count;
  return base * made + Math.min(made, extra);
}

/**
 * GET /pricing (spec 4.17; its fields are not shown, these are ours): every model with its tier, duration
 * range and per-second prices, the API discount, example prices, and the image prices.
 */
export function pricingView() {
  return {
    object: 'pricing' as const,
    currency: 'credits' as const,
    api_discount: API_DISCOUNT,
    formula: 'ceil(credits_per_second x seconds x (1 - api_discount))',
    models: VIDEO_MODELS.map((id) => {
      const spec = MODEL_SPECS[id];
      const examples = [5, 10, 15, 30].filter((seconds) => seconds <= spec.maxDuration);
      return {
        id,
        family: spec.family,
        resolution: spec.resolution,
        min_duration: spec.minDuration,
        max_duration: spec.maxDuration,
        credits_per_second: spec.perSecond,
        examples: Object.fromEntries(examples.map((seconds) => [`${seconds}s`, clipPrice(id, seconds)])),
      };
    }),
    images: {
      standard: { '1': IMAGE_PRICES.standard[1], '4': IMAGE_PRICES.standard[4], megapixels: IMAGE_MEGAPIXELS.standard },
      hd: { '1': IMAGE_PRICES.hd[1], '4': IMAGE_PRICES.hd[4], megapixels: IMAGE_MEGAPIXELS.hd },
      character: IMAGE_PRICES.character,
    },
    assistant: { api_discount: 0, note: 'Assistants (MCP) pay the base price per second.' },
  };
}
