import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { Server } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createTestWebhook, type WebhookReceiver } from '../../../src/index.js';
import { SECRET, baseUrl, frameworkChecks, newReceiver, post, type Mounted } from './suite.js';

// Issue 32 item 4: receiver.fetch(c.req.raw) and receiver.hono() in Hono itself, on Node through @hono/node-server.

async function listen(app: Hono): Promise<Mounted> {
  const server: ServerType = await new Promise((resolve) => {
    const started = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(started));
  });
  return {
    url: `${baseUrl(server as Server)}/webhooks`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The documented recipe. */
function appWith(receiver: WebhookReceiver): Hono {
  const app = new Hono();
  app.post('/webhooks', (c) => receiver.fetch(c.req.raw));
  return app;
}

describe('receiver.fetch() in Hono', () => {
  frameworkChecks((receiver) => listen(appWith(receiver)));

  it('fails with 500 body_already_parsed naming c.req.raw, logged once, when the route read c.req.json() first', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const app = new Hono();
    // The mistake: reading the body through Hono before handing the request over.
    app.post('/webhooks', async (c) => {
      await c.req.json();
      return receiver.fetch(c.req.raw);
    });
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 500, contentType: 'application/problem+json', body: { code: 'body_already_parsed' } });
      expect(String(res.body?.detail)).toContain('c.req.raw');
      expect(handler).not.toHaveBeenCalled();
      expect(logged).toHaveBeenCalledTimes(1);
    } finally {
      logged.mockRestore();
      await close();
    }
  });

  it("reads a body of declared length through Hono's own fast path, without building a web stream; a streamed one still streams", async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const asked: (string | symbol)[] = [];
    const app = new Hono();
    // Records what the receiver reads off the request: `body` makes @hono/node-server build a Request and a stream.
    app.post('/webhooks', (c) =>
      receiver.fetch(
        new Proxy(c.req.raw, {
          get(target, key) {
            asked.push(key);
            const value = Reflect.get(target, key, target) as unknown;
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
      ),
    );
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      expect((await post(url, hook.body, hook.headers)).status).toBe(200);
      expect(asked).toContain('arrayBuffer');
      expect(asked).not.toContain('body');
      asked.length = 0;
      const streamed = createTestWebhook('video.completed', { secret: SECRET });
      const bytes = new TextEncoder().encode(streamed.body);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(0, 100));
          controller.enqueue(bytes.subarray(100));
          controller.close();
        },
      });
      expect((await post(url, stream, streamed.headers)).status).toBe(200);
      expect(asked).toContain('body');
      expect(handler).toHaveBeenCalledTimes(2);
    } finally {
      await close();
    }
  });
});

describe('receiver.hono() in Hono', () => {
  // The one-line mount: Hono's own handler type takes it as it is.
  frameworkChecks((receiver) => {
    const app = new Hono();
    app.post('/webhooks', receiver.hono());
    return listen(app);
  });

  it('on @hono/node-server reads the webhook headers off the Node request: c.req.raw.headers is never built', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const asked: (string | symbol)[] = [];
    const hono = receiver.hono();
    const app = new Hono();
    app.post('/webhooks', (c) => {
      const raw = new Proxy(c.req.raw, {
        get(target, key) {
          asked.push(key);
          const value = Reflect.get(target, key, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return hono({ req: { raw }, env: c.env });
    });
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      expect((await post(url, hook.body, hook.headers)).status).toBe(200);
      expect((await post(url, hook.body, hook.headers)).body).toEqual({ received: true, duplicate: true });
      expect(asked).toContain('arrayBuffer');
      expect(asked).not.toContain('headers');
      expect(handler).toHaveBeenCalledTimes(1);
    } finally {
      await close();
    }
  });

  it('without a Node request (Bun, Deno, Workers: app.fetch(request, env)) it is receiver.fetch(c.req.raw)', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const app = new Hono();
    app.post('/webhooks', receiver.hono());
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    const request = () => new Request('http://worker.example/webhooks', { method: 'POST', body: hook.body, headers: hook.headers });
    // Workers' bindings are an object too: one named `incoming` that is not a Node request changes nothing.
    const first = await app.fetch(request(), { incoming: { headers: {} } });
    expect(first.status).toBe(200);
    expect(await (await app.fetch(request(), {})).json()).toEqual({ received: true, duplicate: true });
    const bad = await app.fetch(new Request('http://worker.example/webhooks', { method: 'POST', body: hook.body, headers: { ...hook.headers, 'x-service-signature': `sha256=${'0'.repeat(64)}` } }));
    expect(bad.status).toBe(401);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('fails with 500 body_already_parsed when a middleware read c.req.json() first', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const app = new Hono();
    app.use('/webhooks', async (c, next) => {
      await c.req.json();
      await next();
    });
    app.post('/webhooks', receiver.hono());
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 500, contentType: 'application/problem+json', body: { code: 'body_already_parsed' } });
      expect(handler).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
      await close();
    }
  });
});
