import { LIMITS } from '../contract/limits.js';

/** Spec section 8: 60 requests per minute per API key. */
export const RATE_LIMIT = LIMITS.requestsPerWindow;
export const RATE_WINDOW_MS = LIMITS.rateWindowMs;

/** What one request's check found, for the X-RateLimit-* headers and a 429. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** Requests left in the window after this one (0 when refused). */
  remaining: number;
  /** When the window ends, in Unix seconds (spec 4: X-RateLimit-Reset). */
  reset: number;
  /** Whole seconds until a refused request may succeed, at least 1; 0 when allowed. */
  retryAfter: number;
}

export interface RateLimiterOptions {
  /** Milliseconds since the epoch: the service's simulated clock. */
  now: () => number;
  /**
   * The time ended windows are dropped by: the service's own, which no account's time is behind (issue 22:
   * an account ahead of the others must not end their windows). @default `now`
   */
  sweepNow?: () => number;
  /** @default 60 */
  limit?: number;
  /** @default 60_000 */
  windowMs?: number;
}

/**
 * A fixed window per key, starting at the key's first request in it (GitHub's and the spec's model:
 * a Reset time the client can wait for). Windows live in memory and age out on the injected clock;
 * a restart starts every key afresh, which only ever lets a client through sooner.
 * @example const decision = limiter.check('key_1'); if (!decision.allowed) reply429(decision.retryAfter);
 */
export class RateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly #now: () => number;
  readonly #sweepNow: () => number;
  readonly #windows = new Map<string, { start: number; count: number }>();
  #sweepAt = 0;

  /** Forgets every window (issue 22's reset). */
  clear(): void {
    this.#windows.clear();
  }

  constructor({ now, sweepNow = now, limit = RATE_LIMIT, windowMs = RATE_WINDOW_MS }: RateLimiterOptions) {
    if (typeof now !== 'function') throw new TypeError('Expected `now` to be a function.');
    if (!(Number.isSafeInteger(limit) && limit > 0)) throw new TypeError(`Expected \`limit\` to be a positive integer, got ${limit}.`);
    if (!(Number.isSafeInteger(windowMs) && windowMs > 0)) throw new TypeError(`Expected \`windowMs\` to be a positive integer, got ${windowMs}.`);
    this.#now = now;
    this.#sweepNow = sweepNow;
    this.limit = limit;
    this.windowMs = windowMs;
  }

  /** Counts one request of `key` and says whether it may go on. A refused request is not counted. */
  check(key: string): RateDecision {
    const now = this.#now();
    this.#sweep(this.#sweepNow());
    let window = this.#windows.get(key);
    if (!window || now >= window.start + this.windowMs) {
      window = { start: now, count: 0 };
      this.#windows.set(key, window);
    }
    const end = window.start + this.windowMs;
    const reset = Math.ceil(end / 1000);
    if (window.count >= this.limit) {
      return { allowed: false, limit: this.limit, remaining: 0, reset, retryAfter: Math.max(1, Math.ceil((end - now) / 1000)) };
    }
    window.count++;
    return { allowed: true, limit: this.limit, remaining: this.limit - window.count, reset, retryAfter: 0 };
  }

  /** Drops ended windows once per window length, so keys that stopped calling cost nothing. */
  #sweep(now: number): void {
    if (now < this.#sweepAt) return;
    this.#sweepAt = now + this.windowMs;
    for (const [key, window] of this.#windows) if (now >= window.start + this.windowMs) this.#windows.delete(key);
  }
}

/** The three headers of spec 4, for every keyed response. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': String(decision.limit),
    'x-ratelimit-remaining': String(decision.remaining),
    'x-ratelimit-reset': String(decision.reset),
  };
}
