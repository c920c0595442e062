import fc from 'fast-check';
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { MemoryDeliveryStore, createReceiver, sign } from '../../src/index.js';
import { SECRET, completedEvent } from '../helpers/webhooks.js';

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
});
