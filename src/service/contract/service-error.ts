import type { ProblemCode } from '../../protocol/problem.js';

// The error `cliphook/service` publishes, apart from the zod mapper of problems.ts (which
// re-exports it), so its declaration names no zod.

/** Why a request was refused: a code of spec section 7 (or one of ours, documented), a sentence, extra members. */
export interface Refusal {
  code: ProblemCode;
  detail: string;
  extra?: Record<string, unknown>;
}

/** The error a command throws for a client's mistake or a refusal of the rules: one spec `code`. */
export class ServiceError extends Error {
  readonly code: ProblemCode;
  readonly detail: string;
  readonly extra: Record<string, unknown> | undefined;
  /** Seconds after which the same request may succeed (also `Retry-After`). */
  readonly retryAfter: number | undefined;
  /**
   * The request is refused, but what it made stays: the pending assets of a 503 moderation_pending, "to use
   * later" (spec 5). Otherwise a refusal takes back everything its command changed.
   */
  readonly keep: boolean;

  constructor(code: ProblemCode, detail: string, { extra, retryAfter, keep = false }: { extra?: Record<string, unknown>; retryAfter?: number; keep?: boolean } = {}) {
    super(detail);
    this.name = 'ServiceError';
    this.code = code;
    this.detail = detail;
    this.extra = extra;
    this.retryAfter = retryAfter;
    this.keep = keep;
  }

  static from(refusal: Refusal): ServiceError {
    return new ServiceError(refusal.code, refusal.detail, refusal.extra ? { extra: refusal.extra } : {});
  }
}
