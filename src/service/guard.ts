import { MIN_BALANCE_FOR_KEYS, type Account, type ApiKey, type AuthRefusal } from './core/accounts.js';
import type { AuthGate } from './core/auth-failures.js';
import type { AssistantRow } from './assistant/connections.js';
import { rateLimitHeaders, type RateDecision } from './core/rate-limit.js';
import { fail, type Result } from './result.js';
import type { Caller } from './service.js';

/** A request refused before it reached its route: the result to answer. */
export type Refused = { ok: false; result: Result };
export type GuardResult = { ok: true; caller: Caller } | Refused;
/** Who a credential named, before the limits are counted (the assistant endpoint counts after reading the body). */
export type Identified = { ok: true; who: Authenticated } | Refused;

/** What `admit` reads: the service's limiter, and how it reports and refuses. */
export interface AdmitDeps {
  limiter: { check(key: string): RateDecision | Promise<RateDecision> };
  warn(message: string): void;
  /** The 402 for a balance below the keys' minimum. */
  insufficient(account: Account, detail: string): Result;
}

/** Who a bearer credential named, before the limits: the account, the key it acts with, and the rate-limit window it counts in. */
export interface Authenticated {
  account: Account;
  key: ApiKey;
  limitName: string;
  /** The assistant connection, on `/mcp`. */
  assistant?: AssistantRow;
}

/**
 * The 401 of a missing or unknown credential, with its `WWW-Authenticate` challenge. `challenge` adds
 * parameters (the assistant endpoint's `resource_metadata`, RFC 9728) after the realm.
 */
export function refuseAuth(who: AuthRefusal, detail?: string, challenge = ''): Refused {
  const result = fail(who, { detail: detail ?? (who === 'invalid_auth_header' ? 'Send Authorization: Bearer <API key>.' : 'This API key is unknown or was revoked.') });
  const header = `Bearer realm="cliphook"${who === 'invalid_auth_header' ? '' : ', error="invalid_token"'}${challenge}`;
  return { ok: false, result: { ...result, headers: { ...result.headers, 'www-authenticate': header } } };
}

/** 429 for an address that failed authentication too often (issue 20 item 6): no credential of it is looked at. */
export function refuseFailures(gate: Extract<AuthGate, { allowed: false }>): Refused {
  const detail = `Too many failed authentications from this address (${gate.limit} a minute): every credential it sends is refused for ${gate.retryAfter} s.`;
  return { ok: false, result: fail('rate_limit_exceeded', { detail, retryAfter: gate.retryAfter }) };
}

/**
 * The checks every keyed endpoint makes after the credential (spec 4, 5 and 8): 60 requests a minute in
 * `who.limitName`'s window (429 with `Retry-After`; 503 when the limiter on Redis does not answer), then a
 * balance of at least 10 credits (402), which the account settings skip.
 */
export async function admit(deps: AdmitDeps, who: Authenticated, lowBalanceOk: boolean): Promise<GuardResult> {
  let decision: RateDecision;
  try {
    // Counted in this process, or in Redis (`redisUrl`) with one round trip.
    decision = await deps.limiter.check(who.limitName);
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
  return { ok: true, caller: { account: who.account, key: who.key, headers, ...(who.assistant ? { assistant: who.assistant } : {}) } };
}
