import { createHash, timingSafeEqual } from 'node:crypto';
import { LIMITS } from '../contract/limits.js';
import { ServiceError } from '../contract/service-error.js';
import { MIN_BALANCE_FOR_KEYS, type Account, type Accounts, type ApiKey } from './accounts.js';
import type { AuthFailures } from './auth-failures.js';
import { tokenHash } from './redis/client.js';

/** The assistant connection a caller acts through on `/mcp` (its row is the assistant module's). */
export interface AssistantIdentity {
  id: string;
  accountId: number;
  clientId: string | null;
}

/** Who is calling, once the gate let them in: every command takes one. */
export interface Caller {
  account: Account;
  /** The key it acts with: the bearer key, or for an assistant signed in with OAuth, the account's oldest live key. */
  key: ApiKey;
  /** On `/mcp`: the assistant connection whose limits apply. */
  assistant?: AssistantIdentity;
}

/** Who a credential named, before the limits: the caller, and the rate-limit window it counts in. */
export interface Identified extends Caller {
  limitName: string;
}

export interface GateOptions {
  accounts: Accounts;
  limiter: { check(key: string): RateDecision | Promise<RateDecision> };
  failures: AuthFailures;
  /** Count windows by the key's token hash (every process on Redis numbers its own key ids). @default false */
  shared?: boolean;
  /**
   * The admin token of the test helpers: `Authorization: Bearer <admin token>`.
   * @default none: no request is the admin
   */
  adminToken?: string;
  /**
   * Told the account a key names once it is known, before its rate window is read: the request acts for it
   * (its own time).
   */
  identified?(accountId: number): void;
  warn(message: string): void;
}

/** Who a credential of a test helper route names: the admin (every account), or an account's key. */
export type AdminOrKey = { admin: true } | { admin: false; who: Identified };

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The checks every keyed request passes first (spec 4, 5.3-5.4 and 8), without HTTP: who
 * the bearer key is (401, and 429 to a wrong one from an address that failed too often), 60 requests a
 * minute per key (the decision; 503 when Redis does not answer) and the balance floor of 10 credits (402). Each refusal
 * is a `ServiceError`; the adapters add the headers (`WWW-Authenticate`, `X-RateLimit-*`).
 * @example
 * const who = gate.identify(req.headers.authorization, req.socket.remoteAddress);
 * const { caller, decision } = await gate.admit(who);
 * gate.floor(caller.account);
 */
export class Gate {
  readonly #options: GateOptions;

  constructor(options: GateOptions) {
    this.#options = options;
  }

  /**
   * Whether `address` may still present a credential that is not valid; throws 429 when
   * it may not. Ask it only once the credential was found invalid: a valid one always passes.
   */
  allowAttempt(address: string | undefined): void {
    if (address === undefined) return;
    const gate = this.#options.failures.gate(address);
    if (gate.allowed) return;
    throw new ServiceError('rate_limit_exceeded', `Too many failed authentications from this address (${gate.limit} a minute): every credential it sends that is not valid is refused for ${gate.retryAfter} s.`, { retryAfter: gate.retryAfter });
  }

  /** Counts a failed credential against `address`. */
  failed(address: string | undefined): void {
    if (address !== undefined) this.#options.failures.fail(address);
  }

  /** A credential found invalid: 429 when `address` failed too often, else counted against it. */
  guessed(address: string | undefined): void {
    this.allowAttempt(address);
    this.failed(address);
  }

  /**
   * Who an `Authorization` header names (spec 5.4): 401 invalid_auth_header or invalid_api_key otherwise.
   * The key is looked up first, so a valid one is never refused by the failure limit.
   */
  identify(authorization: string | undefined, address?: string): Identified {
    const who = this.lookup(authorization);
    if (who === 'invalid_auth_header') throw new ServiceError('invalid_auth_header', 'Send Authorization: Bearer <API key>.');
    if (who === 'invalid_api_key') {
      // The admin token on a keyed route is a mistake, not a guess.
      if (!this.isAdmin(authorization)) this.guessed(address);
      throw new ServiceError('invalid_api_key', 'This API key is unknown or was revoked.');
    }
    return who;
  }

  /**
   * Who the API key of an `Authorization` header names, or why it names no one, refusing nothing and counting
   * no failure: `identify`'s lookup, for an entry point that takes other bearer credentials too (`/mcp`'s OAuth
   * access tokens), which counts a guess only once none of them matched.
   */
  lookup(authorization: string | undefined): Identified | 'invalid_auth_header' | 'invalid_api_key' {
    const who = this.#options.accounts.authenticate(authorization);
    if (typeof who === 'string') return who;
    this.#options.identified?.(who.account.id);
    // Named members: `{ ...who, limitName }` costs V8 ~0.5 µs a request (a copy, then a member added).
    return { account: who.account, key: who.key, limitName: this.limitName(who.key) };
  }

  /** Whether an `Authorization` header carries the admin token (compared in constant time). */
  isAdmin(authorization: string | undefined): boolean {
    const token = this.#options.adminToken;
    const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(authorization ?? '');
    return token !== undefined && match !== null && timingSafeEqual(digest(match[1]!), digest(token));
  }

  /**
   * Who a test helper's credential names: the admin token, or with `orKey` an API key (spec 5.4,
   * as `identify`). Anything else is 401: `invalid_auth_header` without a bearer token, `invalid_api_key`
   * for a token that is not the admin's (a live API key on an admin-only helper included, though it does
   * not count as a failed attempt of the address). Only a token that is neither meets the failure limit.
   */
  identifyAdmin(authorization: string | undefined, address: string | undefined, { orKey }: { orKey: boolean }): AdminOrKey {
    if (this.isAdmin(authorization)) return { admin: true };
    if (orKey) return { admin: false, who: this.identify(authorization, address) };
    const who = this.#options.accounts.authenticate(authorization);
    if (who === 'invalid_auth_header') throw new ServiceError('invalid_auth_header', 'Send Authorization: Bearer <admin token> (cliphook serve prints it; startService answers it as adminToken).');
    if (who === 'invalid_api_key') this.guessed(address);
    throw new ServiceError('invalid_api_key', who === 'invalid_api_key' ? 'This is not the admin token.' : 'This test helper takes the admin token, not an API key.');
  }

  /** The window an API key's requests are counted in. */
  limitName(key: ApiKey): string {
    return this.#options.shared ? tokenHash(key.token) : key.id;
  }

  /**
   * Counts one request in its caller's window (spec 4, 8): the decision, whose headers every answer carries;
   * a request refused by it is `allowed: false` (the adapter answers 429). 503 when the limiter on Redis
   * does not answer. With the limiter in memory the answer is not a promise (no async frame per request).
   */
  admit(who: Identified): Admitted | Promise<Admitted> {
    let decision: RateDecision | Promise<RateDecision>;
    try {
      decision = this.#options.limiter.check(who.limitName);
    } catch (error) {
      throw this.#unanswered(error as Error);
    }
    if (!(decision instanceof Promise)) return admitted(who, decision);
    return decision.then((answered) => admitted(who, answered), (error: Error) => {
      throw this.#unanswered(error);
    });
  }

  #unanswered(error: Error): ServiceError {
    this.#options.warn(`cannot count a request in Redis: ${error.message}`);
    return new ServiceError('upstream_busy', 'The rate limiter did not answer; retry shortly.', { retryAfter: 5 });
  }

  /** Spec 4 and 5.3: below 10 credits every keyed call answers 402 insufficient_credits. */
  floor(account: Account): void {
    if (account.balance < MIN_BALANCE_FOR_KEYS) throw insufficient(account, MIN_BALANCE_FOR_KEYS, `API keys work while the balance is at least ${MIN_BALANCE_FOR_KEYS} credits.`);
  }
}

/** A caller the rate limit let through (or not: `decision.allowed`), with the window's decision. */
export interface Admitted {
  caller: Caller;
  decision: RateDecision;
}

function admitted(who: Identified, decision: RateDecision): Admitted {
  if (decision.allowed) who.account.usage.requests++;
  // Named members, not a rest copy (a copy per request costs V8 time): the caller's shape is the same every time.
  const caller: Caller = who.assistant === undefined ? { account: who.account, key: who.key } : { account: who.account, key: who.key, assistant: who.assistant };
  return { caller, decision };
}

/** 402 insufficient_credits with `required` and `balance` (spec 7); the adapter adds the top-up link. */
export function insufficient(account: Account, required: number, detail?: string): ServiceError {
  return new ServiceError('insufficient_credits', detail ?? `This costs ${required} credits; the balance is ${account.balance}.`, { extra: { required, balance: account.balance } });
}

// The rate limit of spec 4 and 8, the gate's second check: here, not in a module of its own, so a request loads
// fewer files.

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
   * The time ended windows are dropped by: the service's own, which no account's time is behind
   * (an account ahead of the others must not end their windows). @default `now`
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

  /** Forgets every window (`POST /test_helpers/reset`). */
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
