import Fastify, { type FastifyInstance } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { createTestWebhook, sign, type WebhookContext, type WebhookReceiver } from '../../../src/index.js';
import { SECRET, baseUrl, frameworkChecks, newReceiver, post, type Mounted } from './suite.js';

// Issue 32 item 1: receiver.fastify() in Fastify 5 itself.

async function listen(app: FastifyInstance): Promise<Mounted> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `${baseUrl(app.server)}/webhooks`, close: () => app.close() };
}

/** An app as users have one: Fastify's JSON parser for its own routes, the receiver registered beside them. */
function appWith(receiver: WebhookReceiver): FastifyInstance {
  const app = Fastify();
  app.post('/orders', async (request) => ({ parsed: request.body }));
  app.register(receiver.fastify(), { path: '/webhooks' });
  return app;
}

describe('receiver.fastify()', () => {
  frameworkChecks((receiver) => listen(appWith(receiver)));

  it("keeps the app's JSON parser for its other routes, and the raw bytes on the webhook route", async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const app = appWith(receiver);
    const { url, close } = await listen(app);
    try {
      const orders = await post(url.replace('/webhooks', '/orders'), '{"sku":"A1"}', { 'content-type': 'application/json' });
      expect(orders).toMatchObject({ status: 200, body: { parsed: { sku: 'A1' } } });
      // Bytes a JSON parser would not give back (indentation) still verify: the signature is over them.
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const spaced = JSON.stringify(hook.event, null, 2);
      const res = await post(url, spaced, { ...hook.headers, 'x-service-signature': sign(spaced, SECRET) });
      expect(res).toMatchObject({ status: 200, body: { received: true } });
      expect(handler).toHaveBeenCalledTimes(1);
      expect(Buffer.from((handler.mock.calls[0]![1] as WebhookContext).rawBody).toString()).toBe(spaced);
    } finally {
      await close();
    }
  });

  it('takes a webhook sent with another content type, or none, as raw bytes', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const { url, close } = await listen(appWith(receiver));
    try {
      const plain = createTestWebhook('video.completed', { secret: SECRET });
      expect((await post(url, plain.body, { ...plain.headers, 'content-type': 'text/plain' })).status).toBe(200);
      const none = createTestWebhook('video.completed', { secret: SECRET });
      const { 'content-type': _dropped, ...headers } = none.headers;
      expect((await post(url, new TextEncoder().encode(none.body), headers)).status).toBe(200);
      expect(handler).toHaveBeenCalledTimes(2);
    } finally {
      await close();
    }
  });

  it('fails with 500 body_already_parsed, logged once, when a hook replaced the body before the route', async () => {
    const receiver = newReceiver();
    const handler = vi.fn();
    receiver.onAny(handler);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const app = Fastify();
    // The mistake: an app-wide hook that hands routes a parsed object instead of what the parser left.
    app.addHook('preValidation', async (request) => {
      if (Buffer.isBuffer(request.body)) request.body = JSON.parse(request.body.toString('utf8')) as unknown;
    });
    app.register(receiver.fastify(), { path: '/webhooks' });
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 500, contentType: 'application/problem+json', body: { code: 'body_already_parsed' } });
      expect(String(res.body?.detail)).toMatch(/fastify-plugin/);
      expect(handler).not.toHaveBeenCalled();
      expect(logged).toHaveBeenCalledTimes(1);
      expect(String(logged.mock.calls[0]![0])).toContain('body_already_parsed');
    } finally {
      logged.mockRestore();
      await close();
    }
  });

  it('mounts under a prefix, and refuses a bad path at registration with a TypeError naming it', async () => {
    const receiver = newReceiver();
    const app = Fastify();
    app.register(receiver.fastify(), { prefix: '/hooks', path: '/service' });
    const { url, close } = await listen(app);
    try {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      expect((await post(url.replace('/webhooks', '/hooks/service'), hook.body, hook.headers)).status).toBe(200);
    } finally {
      await close();
    }
    const bad = Fastify();
    bad.register(receiver.fastify(), { path: 'webhooks' });
    await expect(bad.ready()).rejects.toThrow(/`path`/);
    await bad.close();
  });
});
