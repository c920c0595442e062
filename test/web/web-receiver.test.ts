import { describe, expect, it, vi } from 'vitest';
import {
  createReceiver,
  MemoryDeliveryStore,
  sign,
  verifyWebhook,
  WebhookVerificationError,
  type ClaimOutcome,
  type DeliveryStore,
  type ReceiverOptions,
} from '../../src/web.js';
import { SECRET, completedEvent, failedEvent, signedRequest } from '../helpers/webhooks.js';

const url = 'https://worker.example/webhooks';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const post = (receiver: ReturnType<typeof createReceiver>, req: { body: BodyInit; headers: HeadersInit }) =>
  receiver.fetch(new Request(url, { method: 'POST', ...req, ...(req.body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit));
const at = (offsetMs = 0) => new Date(NOW + offsetMs).toISOString();

function setup(options: Partial<ReceiverOptions> = {}) {
  const receiver = createReceiver({ secret: SECRET, clock: () => NOW, ...options });
  const completed = vi.fn();
  const any = vi.fn();
  const errors: string[] = [];
  receiver.on('video.completed', completed).onAny(any).onError((error) => void errors.push(error.code));
  return { receiver, completed, any, errors };
}

describe('cliphook/web createReceiver().fetch', () => {
  it('calls the typed handler once, and answers a retry of the delivery as a duplicate (memory store by default)', async () => {
    const { receiver, completed, any } = setup();
    const req = signedRequest(completedEvent({ id: 7, delivered_at: at() }));
    const res = await post(receiver, req);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    expect(completed).toHaveBeenCalledTimes(1);
    expect(completed.mock.calls[0]![1]).toMatchObject({ deliveryId: req.headers['x-service-delivery'] });
    const retry = signedRequest(completedEvent({ id: 7, delivered_at: at(30_000) }), { deliveryId: req.headers['x-service-delivery']! });
    expect(await (await post(receiver, retry)).json()).toEqual({ received: true, duplicate: true });
    expect(any).toHaveBeenCalledTimes(1);
  });

  it('runs one event of one clip once, whatever else its body says, and another clip\'s event too', async () => {
    const { receiver, any } = setup();
    await post(receiver, signedRequest(failedEvent({ id: 4242, error_code: 'upstream_busy', delivered_at: at() })));
    await post(receiver, signedRequest(failedEvent({ id: 4242, error_code: 'upstream_timeout', delivered_at: at() })));
    await post(receiver, signedRequest(failedEvent({ id: 4243, error_code: 'upstream_timeout', delivered_at: at() })));
    expect(any.mock.calls.map(([event]) => [event.id, event.error_code])).toEqual([[4242, 'upstream_busy'], [4243, 'upstream_timeout']]);
  });

  type Mutate = (r: { body: string; headers: Record<string, string> }) => void;
  it.each<[string, number, string, Mutate]>([
    ['a tampered body', 401, 'invalid_signature', (r) => void (r.body = r.body.replace('"id":', '"id":1'))],
    ['no signature', 401, 'missing_signature', (r) => void delete r.headers['x-service-signature']],
    ['a malformed signature', 400, 'malformed_signature', (r) => void (r.headers['x-service-signature'] = 'sha256=00')],
    ['no delivery id', 400, 'missing_delivery_id', (r) => void delete r.headers['x-service-delivery']],
  ])('refuses %s with %i %s, and onError hears it', async (_name, status, code, mutate) => {
    const { receiver, any, errors } = setup();
    const req = signedRequest(completedEvent({ delivered_at: at() }));
    mutate(req);
    const res = await post(receiver, req);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { code: string }).code).toBe(code);
    expect(errors).toEqual([code]);
    expect(any).not.toHaveBeenCalled();
  });

  it('refuses a repeated X-Service-Delivery with 400 missing_delivery_id', async () => {
    const { receiver, any } = setup();
    const req = signedRequest(completedEvent({ delivered_at: at() }));
    const headers = new Headers(req.headers);
    headers.append('x-service-delivery', 'dlv_second');
    const res = await post(receiver, { body: req.body, headers });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('missing_delivery_id');
    expect(any).not.toHaveBeenCalled();
  });

  it('answers 499 to a client that aborts mid-body: no listener call, nothing claimed', async () => {
    const { receiver, any, errors } = setup();
    const req = signedRequest(completedEvent({ delivered_at: at() }));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(req.body.slice(0, 30)));
        controller.error(new Error('client went away'));
      },
    });
    expect((await post(receiver, { body, headers: req.headers })).status).toBe(499);
    expect(errors).toEqual([]);
    expect((await post(receiver, req)).status).toBe(200);
    expect(any).toHaveBeenCalledTimes(1);
  });

  it('refuses a body over the limit with 413, and a stale delivery with 400 by the injected clock', async () => {
    expect((await post(setup({ limit: 256 }).receiver, signedRequest(completedEvent({ delivered_at: at() })))).status).toBe(413);
    const stale = await post(setup().receiver, signedRequest(completedEvent({ delivered_at: at(-301_000) })));
    expect(((await stale.json()) as { code: string }).code).toBe('stale_delivery');
  });

  it('a handler that throws gets 500 without detail and its claim released, so the retry runs it', async () => {
    const { receiver, errors } = setup();
    let calls = 0;
    receiver.on('video.failed', () => {
      if (++calls === 1) throw new Error('D1 is down');
    });
    const req = signedRequest(failedEvent({ delivered_at: at() }));
    const first = await post(receiver, req);
    expect(first.status).toBe(500);
    expect(await first.text()).not.toMatch(/D1/);
    expect(errors).toEqual(['handler_failed']);
    expect((await post(receiver, req)).status).toBe(200);
    expect(calls).toBe(2);
  });

  it('takes a store the user provides (e.g. over a Durable Object), answering with promises', async () => {
    const memory = new MemoryDeliveryStore({ clock: () => NOW });
    const calls: string[] = [];
    const store: DeliveryStore = {
      claim: async (keys, leaseMs, owner): Promise<ClaimOutcome> => (calls.push(`claim ${keys.join(' ')}`), memory.claim(keys, leaseMs, owner)),
      complete: async (keys) => (calls.push('complete'), memory.complete(keys)),
      release: async (keys, owner) => memory.release(keys, owner),
      close: async () => void calls.push('close'),
    };
    const { receiver, any } = setup({ store });
    const req = signedRequest(completedEvent({ id: 99, delivered_at: at() }), { deliveryId: 'dlv_do' });
    expect((await post(receiver, req)).status).toBe(200);
    expect(await (await post(receiver, req)).json()).toEqual({ received: true, duplicate: true });
    expect(any).toHaveBeenCalledTimes(1);
    expect(calls[0]).toBe('claim e:video.completed:99');
    expect(calls[1]).toBe('complete');
    await receiver.close();
    expect(calls.at(-1)).toBe('close');
  });

  it('validates options at construction, naming the option', () => {
    expect(() => createReceiver({ secret: '' })).toThrow(/`secret`/);
    expect(() => createReceiver({ secret: 's', tolerance: -1 })).toThrow(/`tolerance`/);
    expect(() => createReceiver({ secret: 's', limit: 'lots' })).toThrow(/`limit`/);
    expect(() => createReceiver({ secret: 's', leaseMs: 0 })).toThrow(/`leaseMs`/);
    expect(() => createReceiver({ secret: 's', clock: 5 as unknown as () => number })).toThrow(/`clock`/);
    expect(() => createReceiver(undefined as unknown as ReceiverOptions)).toThrow(/secret/);
  });
});

describe('cliphook/web verifyWebhook', () => {
  it('resolves with the delivery id and the typed event, and rejects with WebhookVerificationError', async () => {
    const req = signedRequest(failedEvent({ id: 9, delivered_at: at() }), { deliveryId: 'dlv_9' });
    const verified = await verifyWebhook(new TextEncoder().encode(req.body), new Headers(req.headers), { secret: ['whsec_new', SECRET], now: NOW });
    expect(verified).toEqual({ deliveryId: 'dlv_9', event: JSON.parse(req.body) });
    const bad = verifyWebhook(req.body, { ...req.headers, 'x-service-signature': `sha256=${'0'.repeat(64)}` }, { secret: SECRET, now: NOW });
    await expect(bad).rejects.toBeInstanceOf(WebhookVerificationError);
    await expect(bad).rejects.toMatchObject({ code: 'invalid_signature', status: 401 });
    const notUtf8 = new Uint8Array([0x7b, 0xff, 0x7d]);
    const unreadable = verifyWebhook(notUtf8, { ...req.headers, 'x-service-signature': await sign(notUtf8, SECRET) }, { secret: SECRET });
    await expect(unreadable).rejects.toMatchObject({ code: 'invalid_json', status: 400 });
  });
});
