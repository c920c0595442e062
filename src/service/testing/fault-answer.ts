import { PROBLEM_CODES, problemHeaders, type Problem, type ProblemCode } from '../../protocol/problem.js';
import { ServiceError } from '../contract/problems.js';
import { headersOf, problemOf } from '../http/respond.js';

// What a fault rule's `{ problem: code }` answers: the problem the service itself answers for
// that code — status, members, extra members by code (spec 7) and Retry-After — and nothing is done.

/**
 * The Retry-After a fault sends for a retryable code when its rule gives none: what the service itself
 * sends for it (the busy codes 5 s, a key's first request still running 1 s), or, where the service
 * computes it, the longest it can answer (a rate window of 60 s, the image window of 10 minutes, a
 * clip's file saved within 30 s). The 500s of spec 7 are retryable but carry no Retry-After, as the
 * service's own do not.
 */
export const FAULT_RETRY_AFTER: Readonly<Partial<Record<ProblemCode, number>>> = Object.freeze({
  upstream_busy: 5,
  no_session_available: 5,
  generation_paused: 5,
  moderation_pending: 5,
  idempotency_in_progress: 1,
  rate_limit_exceeded: 60,
  rate_limited: 600,
  concurrency_limit: 30,
  media_not_ready: 30,
});

/** Spec 4: keyed endpoints need a balance of 10 credits. */
const BALANCE_FLOOR = 10;

/** What a fault's problem needs of the request and the rule. */
export interface FaultProblemContext {
  /** The rule that answers (named in `detail`, so a test log says why). */
  ruleId: string;
  /** The request's path: the problem's `instance`. */
  instance: string;
  /** The service's origin: `user_action.url` of a 402 is its top-up page. */
  origin: string;
  /** The account's balance: a 402 carries `required` and `balance` (spec 7). @default 0 */
  balance?: number | undefined;
  /**
   * The codes that name a failing item of the request (`item_index` 0, as the service's batch refusals
   * do, spec 4.2): a decision's `itemCodes` (the `problems` of a route with `indexed`).
   */
  itemCodes?: readonly ProblemCode[] | undefined;
  /** The rule's `retry_after`, which replaces `FAULT_RETRY_AFTER`. */
  retryAfter?: number | null | undefined;
}

interface FaultParts {
  detail: string;
  extra: Record<string, unknown>;
  retryAfter: number | undefined;
}

function partsOf(code: ProblemCode, context: FaultProblemContext): FaultParts {
  const spec: { retryable: boolean } = PROBLEM_CODES[code];
  const extra: Record<string, unknown> = {};
  if (code === 'insufficient_credits') {
    const balance = context.balance ?? 0;
    // What the client reads: more is needed than there is (the fault does not know a price).
    extra.required = Math.max(BALANCE_FLOOR, balance + 1);
    extra.balance = balance;
  }
  if (code === 'moderation_pending') extra.asset_ids = [];
  if (code === 'photo_rejected' || code === 'moderation_rejected') extra.reason_code = 'simulated';
  if (context.itemCodes?.includes(code) && code !== 'batch_too_large') extra.item_index = 0;
  const retryAfter = spec.retryable ? (context.retryAfter ?? FAULT_RETRY_AFTER[code]) : undefined;
  return { detail: `Fault rule ${context.ruleId} answers ${code}; nothing was done.`, extra, retryAfter: retryAfter ?? undefined };
}

/**
 * The answer of a fault rule's problem: status, `application/problem+json` body and headers
 * (`Retry-After` for a retryable code, the `WWW-Authenticate` challenge of a 401). The wiring adds the
 * rate-limit headers of a keyed route, as on every answer.
 * @example faultProblem('upstream_busy', { ruleId: 'flt_1', instance: '/v1/videos/7', origin }) // { status: 503, headers: { 'retry-after': '5', … }, body: { code: 'upstream_busy', retryable: true, retry_after: 5, … } }
 */
export function faultProblem(code: ProblemCode, context: FaultProblemContext): { status: number; headers: Record<string, string>; body: Problem } {
  // The service's one problem builder, on the error the fault step throws.
  const error = faultError(code, context);
  const body = problemOf(error, context);
  return { status: body.status, headers: { ...problemHeaders(body), ...headersOf(error) }, body };
}

/**
 * The same answer as the service error a command throws, for the chain's answer step to turn into its
 * problem (`problemOf`: its `instance`, top-up URL and challenge).
 * @example throw faultError('rate_limit_exceeded', { ruleId: 'flt_2', instance: path, origin })
 */
export function faultError(code: ProblemCode, context: FaultProblemContext): ServiceError {
  const { detail, extra, retryAfter } = partsOf(code, context);
  return new ServiceError(code, detail, { ...(Object.keys(extra).length > 0 ? { extra } : {}), ...(retryAfter === undefined ? {} : { retryAfter }) });
}
