/** Delays before the 2nd to 6th attempt of a webhook delivery (spec section 6.4): 30 s, 2 min, 10 min, 30 min, 2 h. */
export const RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([30_000, 120_000, 600_000, 1_800_000, 7_200_000]);

/** Attempts a delivery gets in all: the first and one per slot of the schedule. */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;

/** What the sender does after a reply. */
export type ReplyClass = 'delivered' | 'retry' | 'permanent';

/**
 * Classifies a receiver's reply. A number is an HTTP status; anything else (an Error, a timeout) is a
 * failure before any status came back. 2xx delivered; 4xx permanent, never retried; 3xx, 5xx and
 * errors are retried on the schedule.
 * @example classifyReply(503) // 'retry'
 */
export function classifyReply(reply: number | Error | unknown): ReplyClass {
  if (typeof reply !== 'number') return 'retry';
  if (reply >= 200 && reply < 300) return 'delivered';
  if (reply >= 400 && reply < 500) return 'permanent';
  return 'retry';
}

/**
 * Milliseconds to wait after attempt number `attempt` (1-based) failed with a retryable reply, or `null`
 * when that was the last attempt.
 */
export function nextRetryDelay(attempt: number): number | null {
  if (!Number.isInteger(attempt) || attempt < 1) throw new TypeError(`Expected \`attempt\` to be a positive integer, got ${attempt}.`);
  return RETRY_SCHEDULE_MS[attempt - 1] ?? null;
}
