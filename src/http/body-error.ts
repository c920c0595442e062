/** Why a request body could not be read: over the limit, or the sender left (or the socket failed) mid-body. */
export class BodyReadError extends Error {
  readonly reason: 'too_large' | 'aborted';
  constructor(reason: 'too_large' | 'aborted') {
    super(reason === 'too_large' ? 'The body is larger than the limit.' : 'The request body could not be read completely.');
    this.name = 'BodyReadError';
    this.reason = reason;
  }
}

/** True for a body read that ended because the client went away (or its stream failed), not for a refusal. */
export function isAborted(error: unknown): error is BodyReadError {
  return error instanceof BodyReadError && error.reason === 'aborted';
}
