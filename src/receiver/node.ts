import { dirname, join } from 'node:path';
import { ReceiverCore, type ReceiverOptions, type ReceiverRuntime } from './core.js';
import { expressAdapter, type NodeMiddleware } from './express.js';
import { fastifyAdapter, type FastifyReceiverPlugin } from './fastify.js';
import { fetchAdapter } from './fetch.js';
import { honoAdapter, type HonoHandler } from './hono.js';
import { DEFAULT_DELIVERIES_FILE, FileDeliveryStore } from './file-delivery-store.js';
import { FileInboxBackend, warnDeadDropped } from './inbox/file-backend.js';
import type { ResolvedInboxOptions } from './inbox/options.js';
import { MemoryInboxBackend, MemoryInboxState } from './inbox/memory-backend.js';
import type { InboxBackend } from './inbox/record.js';
import { RedisInboxBackend } from './inbox/redis-backend.js';
import { MemoryDeliveryStore, type DeliveryStore } from './delivery-store.js';
import { koaAdapter, type KoaMiddleware, type KoaReceiverOptions } from './koa.js';
import { cursorFor } from './reconcile-cursor.js';
import { verifyWith } from './verify.js';

/** Node: node:crypto, synchronous, and the file store by default. */
const NODE_RUNTIME: ReceiverRuntime = {
  verify: verifyWith,
  defaultStore: (clock) => FileDeliveryStore.shared({ clock }),
  openInbox,
  reconcileCursor: cursorFor,
};

/**
 * The memory inboxes, each beside its delivery store (one per namespace): they share its lifetime, as a
 * file inbox shares its folder.
 */
const memoryInboxes = new WeakMap<DeliveryStore, Map<string, MemoryInboxState>>();

/**
 * Redis when `inbox.redis` is given; memory with `inbox.memory`, or beside a `MemoryDeliveryStore` with no
 * `file`; else a file (by default `inbox.json` beside the delivery store's file). A receiver's `namespace`
 * gives it an inbox of its own beside the same store: Redis keys under `<prefix><namespace>:`, the default
 * file `inbox.<namespace>.json`, a memory inbox of its own; an explicit `inbox.file` is taken as given.
 */
function openInbox(options: ResolvedInboxOptions, store: DeliveryStore, clock: () => number, namespace?: string): InboxBackend {
  const { redis, keepDone, keepDoneMs, fsync } = options;
  const prefix = namespace === undefined ? options.prefix : `${options.prefix}${namespace}:`;
  // A run the process's end interrupted counts against these too.
  const maxAttempts = options.backoff.retries + 1;
  const { keepDead, keepDeadMs, onDeadDropped: onDropped = warnDeadDropped } = options;
  if (redis !== undefined) return new RedisInboxBackend({ redis, prefix, keepDone, keepDoneMs, keepDead, keepDeadMs, onDropped, maxAttempts });
  // A memory store forgets every mark with the process: an inbox beside it on disk would outlive them, and
  // test files run in parallel would fight over one `.cliphook/inbox.json`.
  if (options.memory || (options.file === undefined && store instanceof MemoryDeliveryStore)) {
    if (fsync) throw new TypeError('Expected no `inbox.fsync` beside a MemoryDeliveryStore: that inbox is kept in memory. Give `inbox.file` to keep it on disk.');
    let states = memoryInboxes.get(store);
    if (!states) memoryInboxes.set(store, (states = new Map()));
    let state = states.get(namespace ?? '');
    if (!state) states.set(namespace ?? '', (state = new MemoryInboxState()));
    return new MemoryInboxBackend({ state, keepDone, keepDoneMs, keepDead, keepDeadMs, onDropped, maxAttempts, clock });
  }
  const file = options.file ?? join(dirname(store instanceof FileDeliveryStore ? store.file : DEFAULT_DELIVERIES_FILE), namespace === undefined ? 'inbox.json' : `inbox.${namespace}.json`);
  return new FileInboxBackend({ file, fsync, keepDone, keepDoneMs, keepDead, keepDeadMs, onDropped, maxAttempts, clock });
}

/**
 * The receiver: verification, dedupe and dispatch, independent of any framework. `express()` and
 * `fetch()` only read the body and headers and write the reply.
 */
export class Receiver extends ReceiverCore {
  constructor(options: ReceiverOptions) {
    super(options, NODE_RUNTIME);
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
   * Hono handler. On Node (@hono/node-server) it reads the webhook headers off the Node request, which
   * spares building a Fetch API `Headers`; elsewhere it is `receiver.fetch(c.req.raw)`.
   * @example app.post('/webhooks', receiver.hono());
   */
  hono(): HonoHandler {
    return honoAdapter(this);
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
 * Creates a webhook receiver: verifies `X-Service-Signature` on the raw body, dedupes by the signed
 * event (every retry of one `X-Service-Delivery` carries the same event), and calls typed handlers.
 * @example
 * const receiver = createReceiver({ secret: process.env.SIGNING_SECRET! });
 * receiver.on('video.completed', async (event) => console.log(event.video_url));
 * app.post('/webhooks', receiver.express());
 */
export function createReceiver(options: ReceiverOptions): WebhookReceiver {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected an options object with a `secret`.');
  return new WebhookReceiver(options);
}
