import { ReceiverCore, type ReceiverOptions, type ReceiverRuntime } from './core.js';
import { expressAdapter, type NodeMiddleware } from './express.js';
import { fastifyAdapter, type FastifyReceiverPlugin } from './fastify.js';
import { fetchAdapter } from './fetch.js';
import { FileDeliveryStore } from './file-delivery-store.js';
import { koaAdapter, type KoaMiddleware, type KoaReceiverOptions } from './koa.js';
import { Reconciler } from './reconcile.js';
import { cursorFor } from './reconcile-cursor.js';
import type { ReconcileOptions, ReconcileResult } from './reconcile-options.js';
import { verifyWith } from './verify.js';

/** Node: node:crypto, synchronous, and the file store by default. */
const NODE_RUNTIME: ReceiverRuntime = {
  verify: verifyWith,
  defaultStore: (clock) => FileDeliveryStore.shared({ clock }),
};

/**
 * The receiver: verification, dedupe and dispatch, independent of any framework. `express()` and
 * `fetch()` only read the body and headers and write the reply.
 */
export class Receiver extends ReceiverCore {
  readonly #reconciler: Reconciler;

  constructor(options: ReceiverOptions) {
    super(options, NODE_RUNTIME);
    this.#reconciler = new Reconciler(this, cursorFor(this.store), options.clock ?? Date.now);
    if (options.reconcile !== undefined) this.#reconciler.start(options.reconcile);
  }

  /**
   * Issue 30: hands every clip that ended since `since` (default: where the last run got to) to the
   * handlers as the event its webhook carries, through the same dedupe: what a webhook already delivered
   * is a duplicate, and so is a webhook that arrives later. Runs one at a time; the cursor is kept beside
   * the store (a file beside the deliveries file, the same Redis, or memory). Rejects with
   * `ReconcileError` when it could not list every clip (then nothing was handled).
   * @example const { checked, handled, duplicates, failed } = await receiver.reconcile({ apiKey, baseUrl: 'https://api.example.com/v1', since: new Date(Date.now() - 4 * 3600_000) });
   */
  reconcile(options: ReconcileOptions): Promise<ReconcileResult> {
    return this.#reconciler.run(options);
  }

  /** Stops reconciliation (its timer, and a run waiting on Retry-After), then flushes the store. */
  override async close(): Promise<void> {
    await this.#reconciler.close();
    await super.close();
  }
}

/** A receiver with its framework adapters. */
export class WebhookReceiver extends Receiver {
  /**
   * Express (or Connect, or `node:http`) middleware.
   * @example app.post('/webhooks', receiver.express());
   */
  express(): NodeMiddleware {
    return expressAdapter(this);
  }

  /**
   * Fetch API handler.
   * @example export const POST = (req: Request) => receiver.fetch(req);
   */
  fetch(req: Request): Promise<Response> {
    return fetchAdapter(this, req);
  }

  /**
   * Fastify plugin, encapsulated: the app's JSON parser stays for its other routes.
   * @example app.register(receiver.fastify(), { path: '/webhooks' });
   */
  fastify(): FastifyReceiverPlugin {
    return fastifyAdapter(this);
  }

  /**
   * Koa middleware; with `path` it answers `POST` to that path only and passes the rest on.
   * @example app.use(receiver.koa({ path: '/webhooks' })); // before app.use(bodyParser())
   */
  koa(options?: KoaReceiverOptions): KoaMiddleware {
    return koaAdapter(this, options);
  }
}

/**
 * Creates a webhook receiver: verifies `X-Service-Signature` on the raw body, dedupes by
 * `X-Service-Delivery` and by the signed event, and calls typed handlers.
 * @example
 * const receiver = createReceiver({ secret: process.env.SIGNING_SECRET! });
 * receiver.on('video.completed', async (event) => console.log(event.video_url));
 * app.post('/webhooks', receiver.express());
 */
export function createReceiver(options: ReceiverOptions): WebhookReceiver {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected an options object with a `secret`.');
  return new WebhookReceiver(options);
}
