import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAborted } from '../http/body-error.js';
import { bodyError, readNodeBody, wireHeaders } from './body.js';
import type { ReceiverCore, ReceiverReply } from './core.js';

// Structural types only, so the published .d.ts names no Koa type and needs no @types/koa.

/** The part of a Koa context the receiver uses; Koa's own `Context` fits it. */
export interface KoaContextLike {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  status: number;
  body: unknown;
  respond?: boolean;
  set(field: Record<string, string>): void;
}

/** A Koa middleware: `app.use(receiver.koa({ path: '/webhooks' }))` or `router.post('/webhooks', receiver.koa())`. */
export type KoaMiddleware = (ctx: KoaContextLike, next: () => Promise<unknown>) => Promise<void>;

export interface KoaReceiverOptions {
  /**
   * The webhook route: the middleware answers `POST` requests to exactly this path and passes every
   * other request on with `next()`. Leave it out when a router already mounts it on the route.
   * @default undefined (every request the middleware is given is a webhook)
   */
  path?: string;
}

export const KOA_PARSED_HINT =
  'The request body was already consumed by a body parser (koa-bodyparser or @koa/bodyparser ran before receiver.koa()), ' +
  'so the signature cannot be checked over the raw bytes. Register app.use(receiver.koa({ path })) before app.use(bodyParser()).';

/**
 * Adapts a receiver to Koa: reads the raw body from `ctx.req` within the limit and sets `ctx.status`,
 * the headers and `ctx.body`, so Koa's own response pipeline (and any logger around it) sees the reply.
 */
export function koaAdapter(receiver: ReceiverCore, options: KoaReceiverOptions = {}): KoaMiddleware {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected `receiver.koa()` options to be an object.');
  const { path } = options;
  if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/'))) {
    throw new TypeError(`Expected \`path\` to be a path starting with '/', got ${JSON.stringify(path)}.`);
  }
  return async function cliphookReceiver(ctx, next) {
    if (path !== undefined && (ctx.method !== 'POST' || ctx.path !== path)) {
      await next();
      return;
    }
    let result: ReceiverReply;
    try {
      const req = ctx.req;
      const headers = wireHeaders(req);
      let body = readNodeBody(req, receiver, headers, KOA_PARSED_HINT);
      if (!Buffer.isBuffer(body)) body = await body;
      result = await receiver.receive(body, headers);
    } catch (error) {
      // The client left mid-body: nobody to answer; Koa must not write a reply on the half-read connection.
      if (isAborted(error)) {
        ctx.respond = false;
        ctx.res.destroy();
        return;
      }
      // Answered here (and logged once by the receiver), not thrown, so Koa's error
      // handler does not log it a second time and replace the problem body with its own.
      result = receiver.refuse(bodyError(error, receiver));
    }
    ctx.status = result.status;
    ctx.set(result.headers);
    ctx.body = result.body;
  };
}
