// The local retry schedule, pure, with p-retry's vocabulary (retries, minTimeout, maxTimeout, factor).

export interface BackoffOptions {
  /** Retries after the first run; the event is dead after `retries + 1` failed runs. @default 5 */
  retries: number;
  /** Milliseconds before the first retry. @default 1000 */
  minTimeout: number;
  /** The longest wait between two runs, in milliseconds. @default 60_000 */
  maxTimeout: number;
  /** Each wait is the one before times this. @default 2 */
  factor: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = Object.freeze({ retries: 5, minTimeout: 1000, maxTimeout: 60_000, factor: 2 });

/**
 * The wait after failed run number `attempt` (1-based), or `null` when that was the last one allowed:
 * `min(minTimeout × factor^(attempt − 1), maxTimeout)`, p-retry's formula without its optional jitter.
 * @example inboxDelay(1, DEFAULT_BACKOFF) // 1000; inboxDelay(3, DEFAULT_BACKOFF) // 4000; inboxDelay(6, DEFAULT_BACKOFF) // null
 */
export function inboxDelay(attempt: number, { retries, minTimeout, maxTimeout, factor }: BackoffOptions): number | null {
  if (attempt > retries) return null;
  return Math.min(Math.round(minTimeout * factor ** (attempt - 1)), maxTimeout);
}

/** Checks the four options once, at construction, naming the one that is wrong (p-retry's wording). */
export function checkBackoff(options: BackoffOptions): BackoffOptions {
  const { retries, minTimeout, maxTimeout, factor } = options;
  if (!(Number.isSafeInteger(retries) && retries >= 0)) throw new TypeError(`Expected \`retries\` to be a non-negative integer, got ${retries}.`);
  if (!(Number.isFinite(minTimeout) && minTimeout >= 0)) throw new TypeError(`Expected \`minTimeout\` to be a non-negative number, got ${minTimeout}.`);
  if (!(maxTimeout >= minTimeout)) throw new TypeError(`Expected \`maxTimeout\` to be a number at least \`minTimeout\` (${minTimeout}), got ${maxTimeout}.`);
  if (!(Number.isFinite(factor) && factor >= 1)) throw new TypeError(`Expected \`factor\` to be a number of at least 1, got ${factor}.`);
  return { retries, minTimeout, maxTimeout, factor };
}
