const MESSAGES = {
  too_large: 'The body is larger than the limit.',
  aborted: 'The request body could not be read completely.',
  timeout: 'The request body did not arrive in time.',
} as const;

/**
 * Why a request body could not be read: over the limit, the sender left (or the socket failed) mid-body,
 * or the body was still arriving when the reader's deadline passed.
 */
export class BodyReadError extends Error {
  readonly reason: keyof typeof MESSAGES;
  constructor(reason: keyof typeof MESSAGES) {
    super(MESSAGES[reason]);
    this.name = 'BodyReadError';
    this.reason = reason;
  }
}

/** True for a body read that ended because the client went away (or its stream failed), not for a refusal. */
export function isAborted(error: unknown): error is BodyReadError {
  return error instanceof BodyReadError && error.reason === 'aborted';
}
