import type { ToolCode } from '../contract/assistant.js';
import type { ServiceError } from '../contract/problems.js';
import { topUpUrl } from '../contract/settings.js';
import { PROBLEM_CODES, type UserActionKind } from '../../protocol/problem.js';

/** What a tool answers: a value, or a refusal the assistant can read (nothing charged). */
export type ToolAnswer =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; code: ToolCode; message: string; details?: Record<string, unknown>; retryAfter?: number; userActionUrl?: string };

/** What a person can do about a refusal's code (spec 7's `user_action.kind`), as on `/v1`; none for the assistant's own codes. */
export function userActionOf(code: ToolCode): UserActionKind | undefined {
  return Object.hasOwn(PROBLEM_CODES, code) ? (PROBLEM_CODES[code as keyof typeof PROBLEM_CODES] as { userAction?: UserActionKind }).userAction : undefined;
}

/** A refusal; its code is declared in contract/ (a problem code, or one of `ASSISTANT_CODES`). */
export const refuse = (code: ToolCode, message: string, details?: Record<string, unknown>): ToolAnswer => ({ ok: false, code, message, ...(details ? { details } : {}) });

/**
 * A service error as a tool's refusal: its code, its sentence, its extra members, when to retry (a 503's
 * `retry_after`, as on `/v1`), and for a 402 the top-up page at `origin` (the `user_action.url` of `/v1`'s
 * 402), so the assistant can give the person the link without another call.
 */
export function refusalOf(error: ServiceError, origin?: string): Extract<ToolAnswer, { ok: false }> {
  return {
    ok: false,
    code: error.code,
    message: error.detail,
    ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
    ...(error.extra ? { details: error.extra } : {}),
    ...(origin !== undefined && userActionOf(error.code) === 'top_up' ? { userActionUrl: topUpUrl(origin) } : {}),
  };
}
