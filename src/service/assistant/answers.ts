import type { ToolCode } from '../contract/assistant.js';
import type { ServiceError } from '../contract/problems.js';

/** What a tool answers: a value, or a refusal the assistant can read (nothing charged). */
export type ToolAnswer = { ok: true; value: Record<string, unknown> } | { ok: false; code: ToolCode; message: string; details?: Record<string, unknown>; retryAfter?: number };

/** A refusal; issue 31 item 3: its code is declared in contract/ (a problem code, or one of `ASSISTANT_CODES`). */
export const refuse = (code: ToolCode, message: string, details?: Record<string, unknown>): ToolAnswer => ({ ok: false, code, message, ...(details ? { details } : {}) });

/** A service error as a tool's refusal: its code, its sentence, its extra members, and when to retry (a 503's `retry_after`, as on `/v1`). */
export function refusalOf(error: ServiceError): Extract<ToolAnswer, { ok: false }> {
  return { ok: false, code: error.code, message: error.detail, ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }), ...(error.extra ? { details: error.extra } : {}) };
}
