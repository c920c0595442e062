import express from 'express';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { MemoryDeliveryStore, createReceiver, sign, type ReceiverOptions, type VideoCompletedEvent, type WebhookContext } from '../../src/index.js';
import { SECRET, completedEvent, failedEvent, signedRequest } from '../helpers/webhooks.js';

function setup(options: Partial<ReceiverOptions> = {}) {
  const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), ...options });
  const app = express();
  app.post('/webhooks', receiver.express());
  return { receiver, app };
}

const post = (app: express.Express, req: { body: string | Buffer; headers: Record<string, string> }) =>
  request(app).post('/webhooks').set(req.headers).send(req.body);

describe('receiver.express()', () => {
  it('calls the typed handler once with the event and its context', async () => {
    const { receiver, app } = setup();
    const seen: [VideoCompletedEvent, WebhookContext][] = [];
    const failed = vi.fn();
    receiver.on('video.completed', (event, context) => void seen.push([event, context]));
    receiver.on('video.failed', failed);
    const event = completedEvent({ id: 48213, credits_used: 18 });
    const req = signedRequest(event, { deliveryId: 'dlv_1' });

    const res = await post(app, req);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect(seen).toHaveLength(1);
    expect(seen[0]![0]).toMatchObject({ event: 'video.completed', id: 48213, credits_used: 18, video_url: event.video_url });
    expect(seen[0]![1].deliveryId).toBe('dlv_1');
    expect(Buffer.from(seen[0]![1].rawBody).toString()).toBe(req.body);
    expect(failed).not.toHaveBeenCalled();
  });

  it('runs onAny handlers for every event and named handlers for theirs', async () => {
    const { receiver, app } = setup();
    const any = vi.fn();
    const onFailed = vi.fn();
    receiver.onAny(any).on('video.failed', onFailed);
    await post(app, signedRequest(completedEvent()));
    await post(app, signedRequest(failedEvent({ error_code: 'content_rejected' })));
    expect(any).toHaveBeenCalledTimes(2);
    expect(onFailed).toHaveBeenCalledTimes(1);
    expect(onFailed.mock.calls[0]![0].error_code).toBe('content_rejected');
  });

  it('acknowledges and records an event with no handler, so a retry is a duplicate', async () => {
    const { app } = setup();
    const req = signedRequest(failedEvent());
    expect((await post(app, req)).body).toEqual({ received: true });
    expect((await post(app, req)).body).toEqual({ received: true, duplicate: true });
  });

  const cases: [string, (req: ReturnType<typeof signedRequest>) => void, number, string][] = [
    ['missing signature', (r) => delete r.headers['x-service-signature'], 401, 'missing_signature'],
    ['wrong signature', (r) => (r.headers['x-service-signature'] = `sha256=${'0'.repeat(64)}`), 401, 'invalid_signature'],
    ['signature by another secret', (r) => (r.headers['x-service-signature'] = signedRequest(JSON.parse(r.body), { secret: 'whsec_x' }).headers['x-service-signature']!), 401, 'invalid_signature'],
    ['header without sha256= prefix', (r) => (r.headers['x-service-signature'] = r.headers['x-service-signature']!.slice(7)), 400, 'malformed_signature'],
    ['non-hex header', (r) => (r.headers['x-service-signature'] = `sha256=${'z'.repeat(64)}`), 400, 'malformed_signature'],
    ['short header', (r) => (r.headers['x-service-signature'] = 'sha256=abcd'), 400, 'malformed_signature'],
    ['missing delivery id', (r) => delete r.headers['x-service-delivery'], 400, 'missing_delivery_id'],
  ];
  it.each(cases)('refuses a %s', async (_name, mutate, status, code) => {
    const { receiver, app } = setup();
    const handler = vi.fn();
    receiver.onAny(handler);
    const req = signedRequest(completedEvent());
    mutate(req);
    const res = await post(app, req);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe(code);
    expect(res.body.status).toBe(status);
    expect(handler).not.toHaveBeenCalled();
  });

  it('refuses a header sent twice as malformed', async () => {
    const { receiver } = setup();
    const req = signedRequest(completedEvent());
    const twice = req.headers['x-service-signature']!;
    // Node gives a repeated header as an array.
    const reply = await receiver.receive(Buffer.from(req.body), { ...req.headers, 'x-service-signature': [twice, twice] });
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body).code).toBe('malformed_signature');
  });

  it('refuses signed bodies that are not JSON, or not the webhook shape', async () => {
    const { app } = setup();
    const notJson = '{"event":"video.completed",';
    const req = signedRequest(completedEvent());
    const res1 = await post(app, { body: notJson, headers: { ...req.headers, 'x-service-signature': sign(notJson, SECRET) } });
    expect(res1.status).toBe(400);
    expect(res1.body.code).toBe('invalid_json');
    const res2 = await post(app, signedRequest({ ...completedEvent(), credits_used: 'many' }));
    expect(res2.status).toBe(400);
    expect(res2.body.code).toBe('invalid_payload');
    expect(res2.body.detail).toMatch(/credits_used/);
  });

  it('refuses a body over the limit with 413 before hashing it', async () => {
    const { app } = setup({ limit: '1kb' });
    const res = await post(app, signedRequest(completedEvent({ prompt: 'x'.repeat(2000) })));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('body_too_large');
  });

  describe('replay window', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    it.each([
      ['301 s old', -301_000, 400],
      ['301 s ahead', 301_000, 400],
      ['299 s old', -299_000, 200],
      ['299 s ahead', 299_000, 200],
    ])('a delivery %s answers %i', async (_name, offset, status) => {
      const { app } = setup({ clock: () => now });
      const res = await post(app, signedRequest(completedEvent({ delivered_at: new Date(now + offset).toISOString() })));
      expect(res.status).toBe(status);
      if (status === 400) expect(res.body.code).toBe('stale_delivery');
    });

    it('tolerance: false turns the check off', async () => {
      const { app } = setup({ clock: () => now, tolerance: false });
      const res = await post(app, signedRequest(completedEvent({ delivered_at: '2020-01-01T00:00:00Z' })));
      expect(res.status).toBe(200);
    });
  });

  it('accepts both the new and the old secret during a rotation', async () => {
    const { receiver, app } = setup({ secret: ['whsec_new', 'whsec_old'] });
    const handler = vi.fn();
    receiver.onAny(handler);
    expect((await post(app, signedRequest(completedEvent(), { secret: 'whsec_new' }))).status).toBe(200);
    expect((await post(app, signedRequest(completedEvent(), { secret: 'whsec_old' }))).status).toBe(200);
    expect((await post(app, signedRequest(completedEvent(), { secret: 'whsec_older' }))).status).toBe(401);
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('fails at once, naming the fix, when express.json() consumed the body first', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const app = express();
    app.use(express.json());
    app.post('/webhooks', receiver.express());
    const res = await post(app, signedRequest(completedEvent()));
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('body_already_parsed');
    expect(res.body.detail).toMatch(/express\.raw/);
  });

  it('takes the Buffer express.raw() left in req.body', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const handler = vi.fn();
    receiver.onAny(handler);
    const app = express();
    app.post('/webhooks', express.raw({ type: '*/*' }), receiver.express());
    expect((await post(app, signedRequest(completedEvent()))).status).toBe(200);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it("takes req.rawBody left by express.json({ verify }) even though req.body is parsed", async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const handler = vi.fn();
    receiver.onAny(handler);
    const app = express();
    app.use(express.json({ verify: (req, _res, buf) => void ((req as unknown as { rawBody: Buffer }).rawBody = buf) }));
    app.post('/webhooks', receiver.express());
    expect((await post(app, signedRequest(completedEvent()))).status).toBe(200);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('reads the stream when an Express 4 style parser skipped the request but left req.body = {}', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const handler = vi.fn();
    receiver.onAny(handler);
    const app = express();
    // body-parser 1.x sets req.body = req.body || {} before its content-type check.
    app.use((req, _res, next) => {
      req.body = req.body || {};
      next();
    });
    app.post('/webhooks', receiver.express());
    expect((await post(app, signedRequest(completedEvent()))).status).toBe(200);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('handler throws -> 500 without detail, claim released -> the retry runs it and gets 200', async () => {
    const { receiver, app } = setup();
    const errors: unknown[] = [];
    let calls = 0;
    receiver.on('video.completed', () => {
      calls++;
      if (calls === 1) throw new Error('database is down at 10.0.0.5');
    });
    receiver.onError((error) => errors.push(error));
    const req = signedRequest(completedEvent());

    const first = await post(app, req);
    expect(first.status).toBe(500);
    expect(first.body.code).toBe('internal_error');
    expect(JSON.stringify(first.body)).not.toMatch(/10\.0\.0\.5|database/);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error & { code: string }).code).toBe('handler_failed');

    const second = await post(app, req);
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ received: true });
    expect(calls).toBe(2);
  });

  it('a captured request replayed with a forged delivery id does not run twice', async () => {
    const { receiver, app } = setup();
    const handler = vi.fn();
    receiver.onAny(handler);
    const req = signedRequest(completedEvent(), { deliveryId: 'dlv_real' });
    await post(app, req);
    const forged = { ...req, headers: { ...req.headers, 'x-service-delivery': 'dlv_forged' } };
    const res = await post(app, forged);
    expect(res.status).toBe(200);
    expect(res.body.duplicate).toBe(true);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('200 concurrent requests of one delivery run the handler exactly once; every reply is 200 or 503', async () => {
    const { receiver, app } = setup();
    let calls = 0;
    receiver.on('video.completed', async () => {
      calls++;
      await new Promise((resolve) => setImmediate(resolve));
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    const req = signedRequest(completedEvent());
    try {
      const replies = await Promise.all(
        Array.from({ length: 200 }, () =>
          fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers: req.headers, body: req.body }).then(async (r) => ({
            status: r.status,
            retryAfter: r.headers.get('retry-after'),
            body: (await r.json()) as { code?: string },
          })),
        ),
      );
      expect(calls).toBe(1);
      for (const reply of replies) {
        expect([200, 503]).toContain(reply.status);
        if (reply.status === 503) {
          expect(reply.body.code).toBe('delivery_in_progress');
          expect(Number(reply.retryAfter)).toBeGreaterThan(0);
        }
      }
      expect(replies.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a claim held by a process that died expires after the lease', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z');
    const store = new MemoryDeliveryStore({ clock: () => now });
    const event = completedEvent({ delivered_at: new Date(now).toISOString() });
    const req = signedRequest(event);
    // The first process claimed the delivery's event, then died before completing it.
    await store.claim([`e:${event.event}:${event.id}`], 60_000, 'dead-process');
    const { receiver, app } = setup({ store, clock: () => now, leaseMs: 60_000 });
    const handler = vi.fn();
    receiver.onAny(handler);
    expect((await post(app, req)).status).toBe(503);
    now += 60_001;
    const res = await post(app, req);
    expect(res.status).toBe(200);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('validates options at construction, naming the option', () => {
    expect(() => createReceiver({ secret: '' })).toThrow(/`secret`/);
    expect(() => createReceiver({ secret: [] })).toThrow(/`secret`/);
    expect(() => createReceiver({ secret: 's', tolerance: -1, store: new MemoryDeliveryStore() })).toThrow(/`tolerance`/);
    expect(() => createReceiver({ secret: 's', limit: '12 parsecs', store: new MemoryDeliveryStore() })).toThrow(/`limit`/);
    expect(() => createReceiver({ secret: 's', leaseMs: 0, store: new MemoryDeliveryStore() })).toThrow(/`leaseMs`/);
    expect(() => createReceiver(undefined as unknown as ReceiverOptions)).toThrow(/secret/);
  });

  it('onError hears refused requests, and a throwing listener changes nothing', async () => {
    const { receiver, app } = setup();
    const codes: string[] = [];
    receiver.onError((error) => void codes.push(error.code));
    receiver.onError(() => {
      throw new Error('listener bug');
    });
    const req = signedRequest(completedEvent());
    req.headers['x-service-signature'] = `sha256=${'1'.repeat(64)}`;
    expect((await post(app, req)).status).toBe(401);
    expect(codes).toEqual(['invalid_signature']);
  });
});
