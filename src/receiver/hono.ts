import { IncomingMessage } from 'node:http';
import { wireHeaders } from './body.js';
import type { ReceiverCore } from './core.js';
import { fetchAdapter } from './fetch.js';

// Structural types only, so the published .d.ts names no Hono type; Hono's own `Context` fits.

/** The part of a Hono context the receiver reads: the request, and on @hono/node-server its Node request. */
export interface HonoContextLike {
  req: { raw: Request };
  env?: unknown;
}

/** A Hono handler: `app.post('/webhooks', receiver.hono())`. */
export type HonoHandler = (c: HonoContextLike) => Promise<Response>;

/**
 * Adapts a receiver to Hono. On Node (@hono/node-server, whose `c.env.incoming` is the Node request) the
 * webhook headers are read off that request, as the Express and Fastify adapters do, instead of through
 * the Fetch API `Headers` that `c.req.raw.headers` would build for it; the body is still read through
 * `c.req.raw`, which @hono/node-server serves from the Node stream. Elsewhere (Bun, Deno, Workers) it is
 * `receiver.fetch(c.req.raw)`.
 */
export function honoAdapter(receiver: ReceiverCore): HonoHandler {
  return (c) => {
    const incoming = nodeRequestOf(c.env);
    return incoming ? fetchAdapter(receiver, c.req.raw, wireHeaders(incoming), incoming.headers['content-length'] ?? null) : fetchAdapter(receiver, c.req.raw);
  };
}

/** @hono/node-server's bindings: `{ incoming, outgoing }`, the Node request and response (HTTP/1.1; HTTP/2 takes the Fetch path). */
function nodeRequestOf(env: unknown): IncomingMessage | null {
  if (typeof env !== 'object' || env === null) return null;
  const incoming = (env as { incoming?: unknown }).incoming;
  return incoming instanceof IncomingMessage ? incoming : null;
}
