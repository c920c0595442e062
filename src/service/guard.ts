import { MIN_BALANCE_FOR_KEYS, type Account, type Accounts, type ApiKey } from './accounts.js';
import { rateLimitHeaders, type RateDecision } from './rate-limit.js';
import { fail, type Result } from './result.js';
import type { Caller } from './service.js';

export type GuardResult = { ok: true; caller: Caller } | { ok: false; result: Result };

/** What `guardRequest` reads: the service's accounts and limiter, and how it names and reports. */
export interface GuardDeps {
  accounts: Accounts;
  limiter: { check(key: string): RateDecision | Promise<RateDecision> };
  /** The name a key's window is counted under. */
  limitKey(key: ApiKey): string;
  warn(message: string): void;
  /** The 402 for a balance below the keys' minimum. */
  insufficient(account: Account, detail: string): Result;
}

/**
 * The checks every keyed endpoint makes first (spec 4, 5 and 8): the bearer key (401 with
 * `WWW-Authenticate`), 60 requests a minute (429 with `Retry-After`; 503 when the limiter on Redis does
 * not answer), and a balance of at least 10 credits (402), which the account settings skip.
 */
export async function guardRequest(deps: GuardDeps, authorization: string | undefined, lowBalanceOk: boolean): Promise<GuardResult> {
  const who = deps.accounts.authenticate(authorization);
  if (typeof who === 'string') {
    const result = fail(who, { detail: who === 'invalid_auth_header' ? 'Send Authorization: Bearer <API key>.' : 'This API key is unknown or was revoked.' });
    const challenge = who === 'invalid_auth_header' ? 'Bearer realm="cliphook"' : 'Bearer realm="cliphook", error="invalid_token"';
    return { ok: false, result: { ...result, headers: { ...result.headers, 'www-authenticate': challenge } } };
  }
  let decision: RateDecision;
  try {
    // Counted in this process, or in Redis (`redisUrl`) with one round trip.
    decision = await deps.limiter.check(deps.limitKey(who.key));
  } catch (error) {
    deps.warn(`cannot count a request in Redis: ${(error as Error).message}`);
    return { ok: false, result: fail('upstream_busy', { detail: 'The rate limiter did not answer; retry shortly.', retryAfter: 5 }) };
  }
  const headers = rateLimitHeaders(decision);
  if (!decision.allowed) {
    const result = fail('rate_limit_exceeded', { detail: `At most ${decision.limit} requests a minute per API key.`, retryAfter: decision.retryAfter });
    return { ok: false, result: { ...result, headers: { ...headers, ...result.headers } } };
  }
  who.account.usage.requests++;
  if (!lowBalanceOk && who.account.balance < MIN_BALANCE_FOR_KEYS) {
    const result = deps.insufficient(who.account, `API keys work while the balance is at least ${MIN_BALANCE_FOR_KEYS} credits.`);
    return { ok: false, result: { ...result, headers: { ...headers, ...result.headers } } };
  }
  return { ok: true, caller: { account: who.account, key: who.key, headers } };
}
