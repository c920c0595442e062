// The receiver for `cliphook/web`: the same core as the Node entry's, with Web Crypto and, by default,
// a MemoryDeliveryStore. Imports no Node module.
import { ReceiverCore, type ReceiverOptions, type ReceiverRuntime } from './core.js';
import { MemoryDeliveryStore } from './delivery-store.js';
import { fetchAdapter } from './fetch.js';
import { memoryCursorFor, Reconciler } from './reconcile.js';
import type { ReconcileOptions, ReconcileResult } from './reconcile-options.js';
import { verifyWithWeb } from './web-verify.js';

const WEB_RUNTIME: ReceiverRuntime = {
  verify: verifyWithWeb,
  // Memory lasts as long as the isolate: bring a shared store (DeliveryStore) to dedupe across them.
  defaultStore: (clock) => new MemoryDeliveryStore({ clock }),
};

/**
 * A receiver for Fetch API runtimes: handlers per event, dedupe, and a `fetch(request)` handler.
 * Exported by `cliphook/web` as `WebhookReceiver`; made by its `createReceiver`.
 * @example
 * const receiver: WebhookReceiver = createReceiver({ secret: env.SIGNING_SECRET });
 */
export class WebReceiver extends ReceiverCore {
  readonly #reconciler: Reconciler;

  constructor(options: ReceiverOptions) {
    super(options, WEB_RUNTIME);
    this.#reconciler = new Reconciler(this, memoryCursorFor(this.store), options.clock ?? Date.now);
    if (options.reconcile !== undefined) this.#reconciler.start(options.reconcile);
  }

  /**
   * Issue 30: the Node receiver's `reconcile()`, with the cursor in memory (per store): on Workers, run it
   * from a Cron Trigger with an explicit `since`, as an isolate's memory and timers do not last.
   * @example ctx.waitUntil(receiver.reconcile({ apiKey: env.API_KEY, baseUrl: env.BASE_URL, since: Date.now() - 3_600_000 }));
   */
  reconcile(options: ReconcileOptions): Promise<ReconcileResult> {
    return this.#reconciler.run(options);
  }

  /** Stops reconciliation, then flushes the store. */
  override async close(): Promise<void> {
    await this.#reconciler.close();
    await super.close();
  }

  /**
   * Answers a webhook `Request` with a `Response`: 200 once the handlers ran (or for a duplicate), a
   * problem body otherwise. Pass the untouched request: the signature is over its raw bytes.
   * @example export default { fetch: (request: Request) => receiver.fetch(request) };
   */
  fetch(request: Request): Promise<Response> {
    return fetchAdapter(this, request);
  }
}

/**
 * Creates a webhook receiver for Cloudflare Workers, Deno, Bun or any Fetch API runtime: verifies
 * `X-Service-Signature` on the raw body with Web Crypto, dedupes by `X-Service-Delivery` and by the
 * signed event, and calls typed handlers. Exported by `cliphook/web` as `createReceiver`.
 * @example
 * import { createReceiver } from 'cliphook/web';
 * const receiver = createReceiver({ secret: env.SIGNING_SECRET });
 * receiver.on('video.completed', async (event) => console.log(event.video_url));
 * return receiver.fetch(request);
 */
export function createWebReceiver(options: ReceiverOptions): WebReceiver {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected an options object with a `secret`.');
  return new WebReceiver(options);
}
