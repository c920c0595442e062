// The handlers a receiver runs for an event: registered by `on()` and `onAny()`, run by the direct path and
// by the inbox alike. No Node module: the web receiver uses them too.
import type { WebhookEvent, WebhookEventName } from '../protocol/events.js';
import type { WebhookContext, WebhookHandler } from './receiver-types.js';

/** Whether a handler's result is a promise (or any thenable) to wait for. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as PromiseLike<unknown>).then === 'function';
}

/** The handlers by event, and those for every event, in the order they were registered. */
export class Handlers {
  readonly #named = new Map<WebhookEventName, WebhookHandler<never>[]>();
  readonly #any: WebhookHandler[] = [];

  /** Whether any handler is registered: an inbox's recovered events wait for the app's first `on()`. */
  get ready(): boolean {
    return this.#any.length > 0 || this.#named.size > 0;
  }

  /** Adds a handler for `name`, or for every event when `name` is `null`; throws a `TypeError` for a non-function. */
  add(name: WebhookEventName | null, handler: WebhookHandler<never>): void {
    if (typeof handler !== 'function') throw new TypeError(name === null ? 'Expected a handler function.' : `Expected a handler function for ${name}.`);
    if (name === null) {
      this.#any.push(handler as WebhookHandler);
      return;
    }
    const list = this.#named.get(name) ?? [];
    list.push(handler);
    this.#named.set(name, list);
  }

  /**
   * Runs the event's handlers; a single one is called directly, so its own promise is the only one awaited.
   * With several, all run, and the first failure is thrown once every one has settled.
   */
  dispatch(event: WebhookEvent, context: WebhookContext): unknown {
    const named = this.#named.get(event.event);
    const any = this.#any;
    const count = (named?.length ?? 0) + any.length;
    if (count === 0) return undefined; // acknowledged and recorded, so it is not retried forever
    if (count === 1) return ((named?.[0] ?? any[0]) as WebhookHandler)(event, context);
    const runs = [...(named ?? []), ...any].map(async (handler) => (handler as WebhookHandler)(event, context));
    return Promise.allSettled(runs).then((results) => {
      const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed) throw failed.reason;
    });
  }
}
