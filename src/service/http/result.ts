import { problem, problemHeaders, type ProblemCode, type ProblemOptions } from '../../protocol/problem.js';

/**
 * What an adapter answers when it does not write the response itself (the service's pages, the assistant
 * endpoint's refusals): a status, a JSON body and the headers that go with it.
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
