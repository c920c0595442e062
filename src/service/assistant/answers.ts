import type { ServiceError } from '../contract/problems.js';

/** What a tool answers: a value, or a refusal the assistant can read (nothing charged). */
export type ToolAnswer = { ok: true; value: Record<string, unknown> } | { ok: false; code: string; message: string; details?: Record<string, unknown> };

/** A refusal. */
export const refuse = (code: string, message: string, details?: Record<string, unknown>): ToolAnswer => ({ ok: false, code, message, ...(details ? { details } : {}) });

/** A service error as a tool's refusal: its code, its sentence, and its extra members. */
export function refusalOf(error: ServiceError): Extract<ToolAnswer, { ok: false }> {
  return { ok: false, code: error.code, message: error.detail, ...(error.extra ? { details: error.extra } : {}) };
}

