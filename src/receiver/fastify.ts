import type { IncomingMessage } from 'node:http';
import { isAborted } from '../http/body-error.js';
import { readBody } from '../http/read-body.js';
import { WebhookVerificationError } from '../protocol/errors.js';
import { bodyError, wireHeaders } from './body.js';
import type { ReceiverCore, ReceiverReply } from './core.js';

// Structural types only, so the published .d.ts names no Fastify type; Fastify's own
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
  addContentTypeParser(contentType: string, parser: (request: FastifyRequestLike, payload: IncomingMessage, done: (error: Error | null, body?: Buffer) => void) => void): unknown;
  setErrorHandler(handler: (error: { code?: string; statusCode?: number }, request: FastifyRequestLike, reply: FastifyReplyLike) => unknown): unknown;
  post(path: string, handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => unknown): unknown;
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
 * Adapts a receiver to Fastify as an encapsulated plugin: inside it, the only content-type parser reads
 * every body with the receiver's own Node reader, as a Buffer within its `limit` and `bodyTimeout`
 * (Fastify's `requestTimeout` is 0 unless the app sets one), so the app's JSON parser stays for its other
 * routes.
 */
export function fastifyAdapter(receiver: ReceiverCore): FastifyReceiverPlugin {
  const { limit, bodyTimeout } = receiver;
  // Bytes, not a string: Fastify would append `; charset=utf-8` to the problem's content type.
  const reply = (to: FastifyReplyLike, result: ReceiverReply) => to.code(result.status).headers(result.headers).send(Buffer.from(result.body));
  // The refusals become the receiver's problems (its error handler below); a read the client abandoned
  // is a 400 for the app's error handler, as Fastify's own reader makes it (Fastify then closes the connection).
  const failed = (error: unknown): Error => (isAborted(error) ? Object.assign(error, { statusCode: 400 }) : (bodyError(error, receiver) as Error));
  const plugin: FastifyReceiverPlugin = async function cliphookReceiver(instance, options) {
    const { path = '/webhooks' } = options ?? {};
    if (typeof path !== 'string' || !path.startsWith('/')) {
      throw new TypeError(`Expected \`path\` to be a path starting with '/', got ${JSON.stringify(path)}.`);
    }
    // Only inside this plugin's context; every content type (or none) arrives as bytes, for the signature.
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser('*', (request, payload, done) => {
      // A preParsing hook of the app may have replaced the stream: its length is then not the header's.
      const declared = payload === request.raw ? Number(payload.headers['content-length'] ?? Number.NaN) : Number.NaN;
      let body;
      try {
        body = readBody(payload, limit, declared, bodyTimeout);
      } catch (error) {
        return done(failed(error));
      }
      if (Buffer.isBuffer(body)) return done(null, body);
      body.then(
        (bytes) => done(null, bytes),
        (error: unknown) => done(failed(error)),
      );
    });
    // A body over the limit or not read in time fails before the route runs: answer it with the
    // receiver's problem (and tell its listeners), not Fastify's generic one; anything else goes to the
    // app's error handler.
    instance.setErrorHandler((error, _request, to) => {
      if (!(error instanceof WebhookVerificationError)) throw error;
      return reply(to, receiver.refuse(error));
    });
    instance.post(path, async (request, to) => {
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
