import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createTestWebhook, type WebhookReceiver } from '../../../src/index.js';
import { SECRET, baseUrl, frameworkChecks, newReceiver, post, type Mounted } from './suite.js';

// Issue 32 item 2: receiver.koa() in Koa 3 itself.

async function listen(app: Koa): Promise<Mounted> {
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  return {
    url: `${baseUrl(server)}/webhooks`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** An app as users have one: the receiver first, then koa-bodyparser for the app's own routes. */
function appWith(receiver: WebhookReceiver): Koa {
  const app = new Koa();
  app.use(receiver.koa({ path: '/webhooks' }));
  app.use(bodyParser());
  app.use((ctx) => {
    if (ctx.path === '/orders') ctx.body = { parsed: ctx.request.body };
  });
  return app;
}

describe('receiver.koa()', () => {
  frameworkChecks((receiver) => listen(appWith(receiver)));

  it("passes other paths and methods on, so the app's body parser still serves its own routes", async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const { url, close } = await listen(appWith(receiver));
    try {
      const orders = await post(url.replace('/webhooks', '/orders'), '{"sku":"A1"}', { 'content-type': 'application/json' });
      expect(orders).toMatchObject({ status: 200, body: { parsed: { sku: 'A1' } } });
      expect((await fetch(url)).status).toBe(404);
      expect(handler).not.toHaveBeenCalled();
    } finally {
      await close();
    }
  });

  it('fails with 500 body_already_parsed naming the fix, logged once, when koa-bodyparser ran first', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const app = new Koa();
    const koaErrors = vi.fn();
    app.on('error', koaErrors);
    app.use(bodyParser());
    app.use(receiver.koa({ path: '/webhooks' }));
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 500, contentType: 'application/problem+json', body: { code: 'body_already_parsed' } });
      expect(String(res.body?.detail)).toMatch(/before app\.use\(bodyParser\(\)\)/);
      expect(handler).not.toHaveBeenCalled();
      // Once, by the receiver: it answers the request itself rather than throwing to Koa's error handler.
      expect(logged).toHaveBeenCalledTimes(1);
      expect(String(logged.mock.calls[0]![0])).toContain('body_already_parsed');
      expect(koaErrors).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
      await close();
    }
  });

  it('answers every request it is given when mounted on a route without `path`, and refuses a bad `path` with a TypeError', async () => {
    const receiver = newReceiver();
    const app = new Koa();
    // What a router does: call the middleware for its route only.
    const middleware = receiver.koa();
    app.use((ctx, next) => (ctx.path === '/hooks/service' ? middleware(ctx, next) : next()));
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      expect((await post(url.replace('/webhooks', '/hooks/service'), hook.body, hook.headers)).status).toBe(200);
    } finally {
      await close();
    }
    expect(() => receiver.koa({ path: 'webhooks' })).toThrow(TypeError);
    expect(() => receiver.koa({ path: 'webhooks' })).toThrow(/`path`/);
  });

  it('drops a request whose client left mid-body: no reply, no handler, no onError, nothing thrown to Koa', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    const heard = vi.fn();
    receiver.onAny(handler);
    receiver.onError(heard);
    const app = new Koa();
    const koaErrors = vi.fn();
    app.on('error', koaErrors);
    let settled!: (outcome: { headersSent: boolean; respond: boolean | undefined }) => void;
    const outcome = new Promise<{ headersSent: boolean; respond: boolean | undefined }>((resolve) => (settled = resolve));
    let reading!: () => void;
    const started = new Promise<void>((resolve) => (reading = resolve));
    app.use(async (ctx, next) => {
      reading();
      await next();
      settled({ headersSent: ctx.res.headersSent, respond: ctx.respond });
    });
    app.use(receiver.koa({ path: '/webhooks' }));
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const { port } = new URL(url);
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const head = Object.entries(hook.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
      socket.write(`POST /webhooks HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: ${hook.body.length}\r\n${head}\r\n${hook.body.slice(0, 40)}`);
      // Part of the body is on its way; the client leaves once the receiver is reading the rest.
      await started;
      socket.destroy();
      expect(await outcome).toEqual({ headersSent: false, respond: false });
      expect(handler).not.toHaveBeenCalled();
      expect(heard).not.toHaveBeenCalled();
      // Koa reports the socket's own error (the HTTP parser's, at the early EOF) as for any route; the
      // receiver throws nothing to it.
      expect(koaErrors.mock.calls.map(([error]) => (error as { code?: string }).code ?? (error as Error).message)).not.toContainEqual(
        expect.stringMatching(/body_|webhook|cliphook/i),
      );
    } finally {
      await close();
    }
  });
});
