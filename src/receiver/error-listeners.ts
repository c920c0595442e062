// The receiver's error listeners (`receiver.onError`), in a module of their own.
// No Node module: `cliphook/web` shares it.
import type { WebhookHandlerError, WebhookVerificationError } from '../protocol/errors.js';
import type { WebhookContext } from './receiver-types.js';

export type ErrorListener = (error: WebhookVerificationError | WebhookHandlerError, context: Partial<WebhookContext>) => void;

/** Tells every listener of a refused request or a failed handler; with none, logs the 5xx ones. */
export class ErrorListeners {
  readonly #listeners: ErrorListener[] = [];

  add(listener: ErrorListener): void {
    if (typeof listener !== 'function') throw new TypeError('Expected an error listener function.');
    this.#listeners.push(listener);
  }

  /** Tells the listeners; with none, a failure answered with a 5xx (the app's, not the sender's) goes to console.error. */
  emit(error: WebhookVerificationError | WebhookHandlerError, context: Partial<WebhookContext>, status: number): void {
    // With no listener a throwing handler would be a silent 500. Express's final handler logs
    // such errors by default; a 4xx is the sender's mistake (and anyone may send one), so it is not logged.
    if (this.#listeners.length === 0) {
      if (status >= 500) {
        const delivery = context.deliveryId === undefined ? '' : ` delivery ${context.deliveryId}:`;
        console.error(`cliphook receiver:${delivery} answered ${status} (${error.code}). Register receiver.onError(listener) to handle these yourself.`, error);
      }
      return;
    }
    for (const listener of this.#listeners) {
      try {
        listener(error, context);
      } catch {
        // A throwing listener must not change the reply the sender gets.
      }
    }
  }
}
