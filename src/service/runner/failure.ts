import { ServiceError } from '../contract/problems.js';
import { StoreWriteError } from '../core/store.js';

/**
 * The one place an error that is not a refusal becomes one: a change the data file could
 * not take was taken back whole (503, nothing changed or charged); anything else is 500.
 */
export function failureOf(error: unknown, { warn, report }: { warn(message: string): void; report(error: Error): void }): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof StoreWriteError) {
    warn(`a change was not saved and was taken back: ${error.message}`);
    return new ServiceError('upstream_busy', 'The change could not be saved, so nothing was changed or charged. Retry shortly.', { retryAfter: 5 });
  }
  report(error as Error);
  return new ServiceError('internal_error', 'Something went wrong on our side.');
}
