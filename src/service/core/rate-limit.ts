// Issue 31: the rate limiter is the gate's (core/gate.ts); this name stays for the assistant's imports until
// they name gate.js.
export { RATE_LIMIT, RATE_WINDOW_MS, RateLimiter, rateLimitHeaders, type RateDecision, type RateLimiterOptions } from './gate.js';
