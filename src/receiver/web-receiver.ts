// The receiver for `cliphook/web`: the same core as the Node entry's, with Web Crypto and, by default,
// a MemoryDeliveryStore. Imports no Node module.
import { ReceiverCore, type ReceiverOptions, type ReceiverRuntime } from './core.js';
import { MemoryDeliveryStore } from './delivery-store.js';
import { fetchAdapter } from './fetch.js';
import { memoryCursorFor } from './reconcile.js';
import { verifyWithWeb } from './web-verify.js';

const WEB_RUNTIME: ReceiverRuntime = {
  verify: verifyWithWeb,
  // Memory lasts as long as the isolate: bring a shared store (DeliveryStore) to dedupe across them.
  defaultStore: (clock) => new MemoryDeliveryStore({ clock }),
  reconcileCursor: memoryCursorFor,
};

/**
 * A receiver for Fetch API runtimes: handlers per event, dedupe, and a `fetch(request)` handler.
 * Exported by `cliphook/web` as `WebhookReceiver`; made by its `createReceiver`.
 * @example
 * const receiver: WebhookReceiver = createReceiver({ secret: env.SIGNING_SECRET });
 */
export class WebReceiver extends ReceiverCore {
  constructor(options: ReceiverOptions) {
    super(options, WEB_RUNTIME);
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
 * `X-Service-Signature` on the raw body with Web Crypto, dedupes by the signed event (every retry of one
 * `X-Service-Delivery` carries the same event), and calls typed handlers. Exported by `cliphook/web` as `createReceiver`.
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
