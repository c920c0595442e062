import fc from 'fast-check';
import express from 'express';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { MemoryDeliveryStore, createReceiver, sign } from '../../src/index.js';
import { SECRET, completedEvent, signedRequest } from '../helpers/webhooks.js';

const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), limit: '4kb' });
receiver.onAny(() => undefined);
const app = express();
app.post('/webhooks', receiver.express());

const headerValue = fc.oneof(
  fc.string({ maxLength: 80 }).filter((s) => /^[\t\x20-\x7e]*$/.test(s)),
  fc.constantFrom('sha256=', `sha256=${'a'.repeat(64)}`, 'sha256=zz', `sha256=${'0'.repeat(63)}`),
);
const jsonish = fc.oneof(
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 200 }),
  fc.constant(JSON.stringify(completedEvent())),
  fc.record({ event: fc.constantFrom('video.completed', 'video.failed', 'x'), id: fc.oneof(fc.integer(), fc.string(), fc.double()) }).map((r) => JSON.stringify(r)),
);

describe('receiver under malformed input (property)', () => {
  it('never throws and never answers 5xx, whatever the headers and body', async () => {
    await fc.assert(
      fc.asyncProperty(
        jsonish,
        fc.option(headerValue, { nil: undefined }),
        fc.option(headerValue, { nil: undefined }),
        fc.option(headerValue, { nil: undefined }),
        fc.boolean(),
        async (body, signature, delivery, event, signIt) => {
          let req = request(app).post('/webhooks').set('content-type', 'application/json');
          const sig = signIt ? sign(body, SECRET) : signature;
          if (sig !== undefined) req = req.set('x-service-signature', sig);
          if (delivery !== undefined) req = req.set('x-service-delivery', delivery);
          if (event !== undefined) req = req.set('x-service-event', event);
          const res = await req.send(body);
          expect(res.status).toBeLessThan(500);
          expect([200, 400, 401, 413]).toContain(res.status);
          if (res.status !== 200) expect(res.headers['content-type']).toMatch(/problem\+json/);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws and never answers 5xx for arbitrary bytes, signed or not', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 6000 }), fc.boolean(), async (bytes, signIt) => {
        const buffer = Buffer.from(bytes);
        let req = request(app).post('/webhooks').set('content-type', 'application/octet-stream').set('x-service-delivery', 'dlv_fuzz');
        if (signIt) req = req.set('x-service-signature', sign(buffer, SECRET));
        const res = await req.send(buffer);
        expect(res.status).toBeLessThan(500);
      }),
      { numRuns: 200 },
    );
  });

  it('answers 400, not 500, for a signed body nested 20,000 levels deep', async () => {
    const roomy = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), limit: '1mb' });
    const roomyApp = express().post('/webhooks', roomy.express());
    const body = `{"event":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const res = await request(roomyApp).post('/webhooks').set('x-service-signature', sign(body, SECRET)).set('x-service-delivery', 'dlv_deep').send(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_payload');
    const nested = `{"event":"video.completed","id":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const direct = await roomy.receive(Buffer.from(nested), { 'x-service-signature': sign(nested, SECRET), 'x-service-delivery': 'd' });
    expect(direct.status).toBe(400);
  });

  it('the Fetch adapter never rejects and never answers 5xx either', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(jsonish, fc.string({ maxLength: 6000 })),
        fc.option(headerValue, { nil: undefined }),
        fc.option(headerValue, { nil: undefined }),
        fc.boolean(),
        async (body, signature, delivery, signIt) => {
          const headers = new Headers({ 'content-type': 'application/json' });
          const sig = signIt ? sign(body, SECRET) : signature;
          if (sig !== undefined) headers.set('x-service-signature', sig);
          if (delivery !== undefined) headers.set('x-service-delivery', delivery);
          const res = await receiver.fetch(new Request('http://127.0.0.1/webhooks', { method: 'POST', headers, body }));
          expect(res.status).toBeLessThan(500);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the Fetch adapter answers 499 without a problem, an error listener call or a claim when the client aborts mid-body', async () => {
    const store = new MemoryDeliveryStore();
    const aborting = createReceiver({ secret: SECRET, store });
    const heard: string[] = [];
    const handler = vi.fn();
    aborting.onError((error) => void heard.push(error.code)).onAny(handler);
    const req = signedRequest(completedEvent());
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(req.body.slice(0, 40)));
        controller.error(new Error('client aborted'));
      },
    });
    const res = await aborting.fetch(new Request('http://127.0.0.1/webhooks', { method: 'POST', headers: req.headers, body: stream, duplex: 'half' } as RequestInit));
    expect(res.status).toBe(499);
    expect(await res.text()).toBe('');
    expect(heard).toEqual([]);
    expect(handler).not.toHaveBeenCalled();
    const retry = await aborting.fetch(new Request('http://127.0.0.1/webhooks', { method: 'POST', headers: req.headers, body: req.body }));
    expect(await retry.json()).toEqual({ received: true });
    expect(handler).toHaveBeenCalledTimes(1);
  });
});
