import type { ServerResponse } from 'node:http';
import { PROBLEM_CODES, PROBLEM_CONTENT_TYPE, problem, problemHeaders, type Problem } from '../../protocol/problem.js';
import type { ServiceError } from '../contract/problems.js';
import { topUpUrl } from '../contract/settings.js';

// How the service's answers are written: JSON bodies, and every refusal as the problem of spec section 7;
// and the tap on them the test suite checks against the OpenAPI document, in one module.

/** Writes a JSON answer (a problem as `application/problem+json`). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  const isProblem = status >= 400 && typeof body === 'object' && body !== null && 'code' in body;
  const contentType = isProblem ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8';
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
  observe(() => ({ method: res.req?.method ?? 'GET', path: (res.req?.url ?? '/').split('?', 1)[0]!, status, contentType, body }));
}

/** Writes a problem body with its own headers (`Retry-After`) and `extra` ones (the rate-limit headers). */
export function sendProblem(res: ServerResponse, body: Problem, extra: Record<string, string> = {}): void {
  sendJson(res, body.status, body, { ...extra, ...problemHeaders(body) });
}

/** Where a person can act on a problem: the top-up page for a 402 (spec 7 `user_action.url`). */
export interface ProblemContext {
  /** The service's origin, for `user_action.url`. */
  origin: string;
  /** The request path (`instance`). */
  instance: string;
}

/**
 * The problem body of a service error: its code's status and title, its sentence, its extra members, and a
 * 402's top-up link. The one builder of the service's problems (/v1, /mcp, the pages, the
 * fault rules' answers).
 */
export function problemOf(error: ServiceError, { origin, instance }: ProblemContext): Problem {
  const action = PROBLEM_CODES[error.code] as { userAction?: string };
  return problem(error.code, {
    detail: error.detail,
    instance,
    ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
    ...(action.userAction === 'top_up' ? { userActionUrl: topUpUrl(origin) } : {}),
    ...(error.extra ? { extra: error.extra } : {}),
  });
}

/**
 * The headers a refusal carries beyond its problem's own: the `WWW-Authenticate` challenge of a 401 (spec
 * 5.4; `error="invalid_token"` for a key that is unknown or revoked), `Content-Range` of a 416 (RFC 9110).
 */
export function headersOf(error: ServiceError): Record<string, string> {
  if (error.code === 'invalid_auth_header') return { 'www-authenticate': 'Bearer realm="cliphook"' };
  if (error.code === 'invalid_api_key') return { 'www-authenticate': 'Bearer realm="cliphook", error="invalid_token"' };
  if (error.code === 'range_not_satisfiable' && typeof error.extra?.size === 'number') return { 'content-range': `bytes */${error.extra.size}` };
  return {};
}

/** Writes an adapter's answer (`status`, `body`, `headers`) as JSON. */
export function sendResult(res: ServerResponse, result: { status: number; body: unknown; headers?: Record<string, string> }): void {
  sendJson(res, result.status, result.body, result.headers);
}

/** One JSON answer the service wrote: what the request asked, and what it got. */
export interface Answer {
  method: string;
  /** The request's path, without its query. */
  path: string;
  status: number;
  contentType: string;
  body: unknown;
}

const taps = new Set<(answer: Answer) => void>();

/**
 * Observes every JSON answer the service writes (the test suite checks each one against the OpenAPI
 * document, so coverage grows with the suite). Returns how to stop. Nothing observes in production, and
 * an empty set costs one size check per answer.
 * @example const stop = tapAnswers((answer) => seen.push(answer));
 */
export function tapAnswers(tap: (answer: Answer) => void): () => void {
  taps.add(tap);
  return () => void taps.delete(tap);
}

/** @internal Called by the router for each answer. */
export function observe(make: () => Answer): void {
  if (taps.size === 0) return;
  const answer = make();
  for (const tap of taps) tap(answer);
}
