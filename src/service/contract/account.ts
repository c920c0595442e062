import { z } from 'zod';
import { VIDEO_MODELS } from './pricing.js';

// Spec 2.8, 4.16 and 4.17: the account and the prices. Their fields are "not shown" by the spec; these
// are ours, documented in docs/service.md.

export const Account = z
  .object({
    id: z.int(),
    object: z.literal('account'),
    balance: z.int(),
    currency: z.literal('credits'),
    topped_up: z.boolean(),
    keys: z.int().meta({ description: 'Live API keys.' }),
    api_usage: z.object({
      requests: z.int(),
      credits_spent: z.int(),
      credits_refunded: z.int(),
      videos_created: z.int(),
      videos_in_progress: z.int(),
      credits_used: z.int(),
    }),
  })
  .meta({ id: 'Account' });

const ImagePrices = z.object({ '1': z.int(), '4': z.int(), megapixels: z.number() });

export const Pricing = z
  .object({
    object: z.literal('pricing'),
    currency: z.literal('credits'),
    api_discount: z.number(),
    formula: z.string(),
    models: z.array(
      z.object({
        id: z.enum(VIDEO_MODELS),
        family: z.enum(['standard', 'cinema']),
        resolution: z.enum(['480p', '720p', '1080p']),
        min_duration: z.int(),
        max_duration: z.int(),
        credits_per_second: z.int(),
        examples: z.record(z.string(), z.int()),
      }),
    ),
    images: z.object({ standard: ImagePrices, hd: ImagePrices, character: z.int() }),
    assistant: z.object({ api_discount: z.number(), note: z.string() }),
  })
  .meta({ id: 'Pricing' });
