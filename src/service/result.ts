import { problem, problemHeaders, type ProblemCode, type ProblemOptions } from '../protocol/problem.js';
import type { Refusal } from './videos/validate.js';

/**
 * What a service operation answers, whatever carries it (the HTTP routes, the assistant's tools): a
 * status, a JSON body and the headers that go with it. Operations never throw for a client's mistake.
 */
export interface Result {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A JSON result. */
export function ok(status: number, body: unknown, headers?: Record<string, string>): Result {
  return headers ? { status, body, headers } : { status, body };
}

/** A problem of spec section 7, with its headers (`Retry-After` when `retryAfter` is set). */
export function fail(code: ProblemCode, options: ProblemOptions = {}): Result {
  const body = problem(code, options);
  return { status: body.status, body, headers: problemHeaders(body) };
}

/** A validation refusal as its problem. */
export function refused(refusal: Refusal, options: Omit<ProblemOptions, 'detail' | 'extra'> = {}): Result {
  return fail(refusal.code, { ...options, detail: refusal.detail, ...(refusal.extra ? { extra: refusal.extra } : {}) });
}

/** Adds headers (the rate-limit ones on every keyed response) to a result. */
export function withHeaders(result: Result, headers: Record<string, string>): Result {
  return { ...result, headers: { ...headers, ...result.headers } };
}

/**
 * The answer to a change the data file could not take (issue 20 item 9): 503 upstream_busy with
 * Retry-After, and nothing changed (spec 7: temporary, nothing charged), so the same request can be sent again.
 */
export function notSaved(): Result {
  return fail('upstream_busy', { detail: 'The change could not be saved, so nothing was changed or charged. Retry shortly.', retryAfter: 5 });
}
