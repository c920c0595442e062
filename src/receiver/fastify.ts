import type { IncomingMessage } from 'node:http';
import { WebhookVerificationError } from '../protocol/errors.js';
import { tooLarge, wireHeaders } from './body.js';
import type { ReceiverCore, ReceiverReply } from './core.js';

// Issue 32 item 1: structural types only, so the published .d.ts names no Fastify type; Fastify's own
// instance, request and reply fit them (methods, so their parameters are compared both ways).

/** The part of a Fastify request the receiver reads. */
export interface FastifyRequestLike {
  raw: IncomingMessage;
  body?: unknown;
}

/** The part of a Fastify reply the receiver writes. */
export interface FastifyReplyLike {
  code(status: number): FastifyReplyLike;
  headers(values: Record<string, string>): FastifyReplyLike;
  send(payload?: Buffer): FastifyReplyLike;
}

/** The part of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  removeAllContentTypeParsers(): unknown;
  addContentTypeParser(
    contentType: string,
    options: { parseAs: 'buffer'; bodyLimit: number },
    parser: (request: unknown, body: Buffer, done: (error: Error | null, body?: Buffer) => void) => void,
  ): unknown;
  setErrorHandler(handler: (error: { code?: string; statusCode?: number }, request: FastifyRequestLike, reply: FastifyReplyLike) => unknown): unknown;
  post(path: string, options: { bodyLimit: number }, handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => unknown): unknown;
}

/** Options given to `app.register(receiver.fastify(), options)`, beside Fastify's own (`prefix`, …). */
export interface FastifyReceiverOptions {
  /** The webhook route inside the plugin (after any `prefix`). @default '/webhooks' */
  path?: string;
}

/** A Fastify plugin: `app.register(receiver.fastify(), { path: '/webhooks' })`. Encapsulated: it changes no parser outside itself. */
export type FastifyReceiverPlugin = (instance: FastifyInstanceLike, options: FastifyReceiverOptions) => Promise<void>;

export const FASTIFY_PARSED_HINT =
  'The request body reached the webhook route already parsed (a hook replaced request.body), so the signature cannot be checked over the raw bytes. ' +
  'Register receiver.fastify() as it is, without fastify-plugin, and leave request.body alone on its route.';

/**
 * Adapts a receiver to Fastify as an encapsulated plugin: inside it, the only content-type parser keeps
 * every body as a Buffer within the receiver's `limit`, so the app's JSON parser stays for its other routes.
 */
export function fastifyAdapter(receiver: ReceiverCore): FastifyReceiverPlugin {
  const limit = receiver.limit;
  // Bytes, not a string: Fastify would append `; charset=utf-8` to the problem's content type.
  const reply = (to: FastifyReplyLike, result: ReceiverReply) => to.code(result.status).headers(result.headers).send(Buffer.from(result.body));
  const plugin: FastifyReceiverPlugin = async function cliphookReceiver(instance, options) {
    const { path = '/webhooks' } = options ?? {};
    if (typeof path !== 'string' || !path.startsWith('/')) {
      throw new TypeError(`Expected \`path\` to be a path starting with '/', got ${JSON.stringify(path)}.`);
    }
    // Issue 32 item 1: only inside this plugin's context; every content type (or none) arrives as bytes.
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: limit }, (_request, body, done) => done(null, body));
    // Fastify refuses an oversized body before the route runs: answer it with the receiver's problem
    // (and tell its listeners), not Fastify's generic 413; anything else goes to the app's error handler.
    instance.setErrorHandler((error, _request, to) => {
      if (error.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw error;
      return reply(to, receiver.refuse(tooLarge(limit)));
    });
    instance.post(path, { bodyLimit: limit }, async (request, to) => {
      const body = request.body === undefined || request.body === null ? Buffer.alloc(0) : request.body;
      const result = Buffer.isBuffer(body)
        ? await receiver.receive(body, wireHeaders(request.raw))
        : receiver.refuse(new WebhookVerificationError('body_already_parsed', 500, FASTIFY_PARSED_HINT));
      return reply(to, result);
    });
  };
  // Named in Fastify's plugin tree and errors (fastify.printPlugins()); not skip-override, so it stays encapsulated.
  Object.defineProperty(plugin, Symbol.for('fastify.display-name'), { value: 'cliphook-receiver' });
  return plugin;
}
