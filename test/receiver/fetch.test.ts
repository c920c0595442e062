import { describe, expect, it, vi } from 'vitest';
import { MemoryDeliveryStore, createReceiver } from '../../src/index.js';
import { SECRET, completedEvent, signedRequest } from '../helpers/webhooks.js';

const url = 'http://127.0.0.1/api/webhooks';

describe('receiver.fetch()', () => {
  it('verifies, dispatches and answers with a Response', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const handler = vi.fn();
    receiver.on('video.completed', handler);
    const req = signedRequest(completedEvent({ id: 77 }));

    const res = await receiver.fetch(new Request(url, { method: 'POST', headers: req.headers, body: req.body }));

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    expect(handler).toHaveBeenCalledTimes(1);
    expect(handler.mock.calls[0]![0].id).toBe(77);
    const again = await receiver.fetch(new Request(url, { method: 'POST', headers: req.headers, body: req.body }));
    expect(await again.json()).toEqual({ received: true, duplicate: true });
  });

  it('answers problems with their status and code', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const req = signedRequest(completedEvent());
    const res = await receiver.fetch(new Request(url, { method: 'POST', headers: { ...req.headers, 'x-service-signature': 'sha256=00' }, body: req.body }));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).code).toBe('malformed_signature');
  });

  it('refuses an X-Service-Delivery sent twice (Headers joins it with ", ") with 400, as a repeated signature', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const handler = vi.fn();
    receiver.onAny(handler);
    const req = signedRequest(completedEvent());
    const headers = new Headers(req.headers);
    headers.append('x-service-delivery', 'dlv_forged');
    const res = await receiver.fetch(new Request(url, { method: 'POST', headers, body: req.body }));
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe('missing_delivery_id');
    const signatureTwice = new Headers(req.headers);
    signatureTwice.append('x-service-signature', req.headers['x-service-signature']!);
    const res2 = await receiver.fetch(new Request(url, { method: 'POST', headers: signatureTwice, body: req.body }));
    expect((await res2.json()).code).toBe('malformed_signature');
    expect(handler).not.toHaveBeenCalled();
  });

  it('stops reading a streamed body as soon as it passes the limit', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), limit: 1024 });
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(512));
        if (pulled > 1000) controller.close();
      },
    });
    const res = await receiver.fetch(new Request(url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit));
    expect(res.status).toBe(413);
    expect((await res.json()).code).toBe('body_too_large');
    expect(pulled).toBeLessThan(10);
  });

  it('refuses a declared Content-Length over the limit without reading', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), limit: 10 });
    const req = signedRequest(completedEvent());
    const res = await receiver.fetch(new Request(url, { method: 'POST', headers: { ...req.headers, 'content-length': String(req.body.length) }, body: req.body }));
    expect(res.status).toBe(413);
  });

  it('refuses a request whose body was already read', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const req = signedRequest(completedEvent());
    const request = new Request(url, { method: 'POST', headers: req.headers, body: req.body });
    await request.json();
    const res = await receiver.fetch(request);
    expect(res.status).toBe(500);
    expect((await res.json()).code).toBe('body_already_parsed');
  });
});
