import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import type { Server } from 'node:http';
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
});
