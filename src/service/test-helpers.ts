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
 *
 * Time cannot be taken back once what fell due has run, so the data file is tried first: when it cannot
 * be written the answer is 503 and the clock has not moved (issue 20 item 9). Once moved, the advance is
 * answered 200 even if saving what it did fails then: that is queued and written when the disk lets it.
 */
export async function advanceClock(service: Service, body: unknown): Promise<Result> {
  const seconds = (body as { seconds?: unknown } | null)?.seconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_ADVANCE_SECONDS) {
    return fail('invalid_parameter', { detail: `seconds is a number above 0 and at most ${MAX_ADVANCE_SECONDS}.` });
  }
  await service.store.probe();
  await service.clock.advance(Math.round(seconds * 1000));
  await service.store.commit().catch((error: Error) => service.warn(`the clock moved, but saving what it did waits for the disk: ${error.message}`));
  return ok(200, { object: 'test_clock', advanced_seconds: seconds, now: new Date(service.clock.now()).toISOString(), frozen: service.clock.frozen, pending_timers: service.clock.timers });
}
