import { fail, ok, type Result } from './result.js';
import type { Service } from './service.js';

/** The longest single advance: a year, far beyond every time rule of the spec (7-day links, 30-day characters). */
export const MAX_ADVANCE_SECONDS = 366 * 24 * 60 * 60;

/** GET /test_helpers/clock: the simulated time every rule of the service reads. */
export function getClock(service: Service): Result {
  return ok(200, { object: 'test_clock', now: new Date(service.clock.now()).toISOString(), frozen: service.clock.frozen, pending_timers: service.clock.timers });
}

/**
 * POST /test_helpers/clock/advance `{ "seconds": N }` (Stripe's test clocks): moves the simulated clock,
 * firing on the way, each at its own instant, what falls due: clips that finish, moderation that ends,
 * webhook retries, and links and windows that expire. Answers once it has all settled.
 */
export async function advanceClock(service: Service, body: unknown): Promise<Result> {
  const seconds = (body as { seconds?: unknown } | null)?.seconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_ADVANCE_SECONDS) {
    return fail('invalid_parameter', { detail: `seconds is a number above 0 and at most ${MAX_ADVANCE_SECONDS}.` });
  }
  await service.clock.advance(Math.round(seconds * 1000));
  await service.store.commit();
  return ok(200, { object: 'test_clock', advanced_seconds: seconds, now: new Date(service.clock.now()).toISOString(), frozen: service.clock.frozen, pending_timers: service.clock.timers });
}
