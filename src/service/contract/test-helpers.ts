import { z } from 'zod';
import { Timestamp } from './common.js';
import { rule } from './problems.js';

// The test helpers (Stripe's test clocks): what a user's tests call to move the simulated time.

/** The longest single advance: a year, far beyond every time rule of the spec (7-day links, 30-day characters). */
export const MAX_ADVANCE_SECONDS = 366 * 24 * 60 * 60;

export const Clock = z
  .object({
    object: z.literal('test_clock'),
    now: Timestamp,
    frozen: z.boolean(),
    pending_timers: z.int(),
    advanced_seconds: z.number().optional(),
  })
  .meta({ id: 'TestClock' });

export const AdvanceRequest = z
  .object({
    seconds: rule(z.number().gt(0).max(MAX_ADVANCE_SECONDS), { code: 'invalid_parameter', detail: () => `seconds is a number above 0 and at most ${MAX_ADVANCE_SECONDS}.` }),
  })
  .meta({ id: 'AdvanceClockRequest' });
