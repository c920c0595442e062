// The framework rows of bench/middleware.ts (issue 32): each adapter in its framework beside a bare route of
// the same framework that reads the raw body and answers the same 200. Not a benchmark by itself.
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { code } from './code.js';

export const FRAMEWORK_KINDS = ['fastify-bare', 'fastify', 'koa-bare', 'koa', 'hono-bare', 'hono', 'hono-fetch'] as const;
export type FrameworkKind = (typeof FRAMEWORK_KINDS)[number];

export const FRAMEWORK_LABELS: Record<FrameworkKind, string> = {
  'fastify-bare': 'Fastify 5 route: raw body (parseAs buffer), then 200',
  fastify: 'Fastify 5 + receiver.fastify() (verify, FileDeliveryStore, handler)',
  'koa-bare': 'Koa 3 middleware: raw-body, then 200',
  koa: 'Koa 3 + receiver.koa() (verify, FileDeliveryStore, handler)',
  'hono-bare': 'Hono on @hono/node-server: arrayBuffer(), then 200',
  hono: 'Hono + receiver.hono() (verify, FileDeliveryStore, handler)',
  'hono-fetch': 'Hono + receiver.fetch(c.req.raw), the Fetch API path (same receiver)',
};

/** Each adapter's kind and its framework's bare route. */
export const FRAMEWORK_PAIRS: readonly (readonly [FrameworkKind, FrameworkKind])[] = [
  ['fastify', 'fastify-bare'],
  ['koa', 'koa-bare'],
  ['hono', 'hono-bare'],
  ['hono-fetch', 'hono-bare'],
];

/** Rows shown for reference, without the target: `receiver.fetch()` is what Bun, Deno and Workers run. */
export const FRAMEWORK_REFERENCE: readonly FrameworkKind[] = ['hono-fetch'];

export function isFrameworkKind(kind: string): kind is FrameworkKind {
  return (FRAMEWORK_KINDS as readonly string[]).includes(kind);
}

export interface FrameworkServer {
  port: number;
  handled(): number;
  writes(): number;
  close(): Promise<void>;
}

const ACK = '{"received":true}';

/** Starts one framework server on 127.0.0.1:0. */
export async function frameworkServer(kind: FrameworkKind, { secret, path, limit }: { secret: string; path: string; limit: string }): Promise<FrameworkServer> {
  let handled = 0;
  let writes = () => 0;
  let closeReceiver = async () => {};
  const receiver = async () => {
    // The receiver as users run it: the built package, with its default kind of store (a file).
    const { createReceiver, FileDeliveryStore } = await code<typeof import('../../src/index.js')>('index.js');
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-fw-'));
    const store = new FileDeliveryStore({ file: join(dir, 'deliveries.json') });
    const made = createReceiver({ secret, store, tolerance: 300, limit });
    made.on('video.completed', async () => {
      handled++;
    });
    writes = () => store.writes;
    closeReceiver = async () => {
      await made.close();
      rmSync(dir, { recursive: true, force: true });
    };
    return made;
  };

  if (kind === 'fastify' || kind === 'fastify-bare') {
    const { default: Fastify } = await import('fastify');
    const app = Fastify();
    if (kind === 'fastify') app.register((await receiver()).fastify(), { path });
    else {
      app.removeAllContentTypeParsers();
      app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 256 * 1024 }, (_request, body, done) => done(null, body));
      app.post(path, async (_request, reply) => {
        handled++;
        return reply.code(200).header('content-type', 'application/json').send(Buffer.from(ACK));
      });
    }
    await app.listen({ host: '127.0.0.1', port: 0 });
    return { port: (app.server.address() as AddressInfo).port, handled: () => handled, writes: () => writes(), close: async () => void (await app.close(), await closeReceiver()) };
  }

  let server: Server;
  if (kind === 'koa' || kind === 'koa-bare') {
    const { default: Koa } = await import('koa');
    const app = new Koa();
    if (kind === 'koa') app.use((await receiver()).koa({ path }));
    else {
      const { default: getRawBody } = await import('raw-body');
      app.use(async (ctx, next) => {
        if (ctx.method !== 'POST' || ctx.path !== path) return next();
        await getRawBody(ctx.req, { limit });
        handled++;
        ctx.type = 'application/json';
        ctx.body = ACK;
      });
    }
    server = await new Promise((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
  } else {
    const { Hono } = await import('hono');
    const { serve } = await import('@hono/node-server');
    const app = new Hono();
    if (kind === 'hono') {
      const made = await receiver();
      app.post(path, made.hono());
    } else if (kind === 'hono-fetch') {
      const made = await receiver();
      app.post(path, (c) => made.fetch(c.req.raw));
    } else {
      app.post(path, async (c) => {
        await c.req.raw.arrayBuffer();
        handled++;
        return c.body(ACK, 200, { 'content-type': 'application/json' });
      });
    }
    server = await new Promise((resolve) => {
      const listening = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(listening as Server));
    });
  }
  return {
    port: (server.address() as AddressInfo).port,
    handled: () => handled,
    writes: () => writes(),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await closeReceiver();
    },
  };
}
