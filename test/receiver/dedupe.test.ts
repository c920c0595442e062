// Issue 10: which requests count as the same event. X-Service-Delivery is not signed, so the receiver
// claims a key derived from the signed body: since issue 30, its event and clip id (a clip ends once).
import { writeFile } from 'node:fs/promises';
import { describe, expect, it, vi } from 'vitest';
import { FileDeliveryStore, MemoryDeliveryStore, createReceiver, sign, type DeliveryStore, type WebhookEvent } from '../../src/index.js';
import { SECRET, failedEvent, signedRequest, tempDir } from '../helpers/webhooks.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

/** An attempt as the emitter builds it: the stored payload with `,"delivered_at":"…"` appended. */
function attempt(payload: Omit<WebhookEvent, 'delivered_at'>, deliveredAt: string, deliveryId: string) {
  const body = `${JSON.stringify(payload).slice(0, -1)},"delivered_at":"${deliveredAt}"}`;
  return {
    body,
    headers: { 'x-service-event': payload.event, 'x-service-signature': sign(body, SECRET), 'x-service-delivery': deliveryId } as Record<string, string>,
  };
}

function payload(overrides: Partial<WebhookEvent> = {}): Omit<WebhookEvent, 'delivered_at'> {
  const { delivered_at: _, ...rest } = failedEvent({ id: 4242, ...overrides } as Partial<WebhookEvent> as never);
  return rest;
}

function setup(store: DeliveryStore = new MemoryDeliveryStore({ clock: () => NOW })) {
  const receiver = createReceiver({ secret: SECRET, store, clock: () => NOW });
  const handler = vi.fn();
  receiver.onAny(handler);
  const send = async (req: { body: string; headers: Record<string, string> }) => {
    const reply = await receiver.receive(Buffer.from(req.body), req.headers);
    return { status: reply.status, body: JSON.parse(reply.body) as { duplicate?: boolean; code?: string } };
  };
  return { receiver, handler, send };
}

describe('receiver dedupe: what counts as the same event', () => {
  it('one event of one clip is one event, whatever else its body says (issue 30: a clip ends once)', async () => {
    const { handler, send } = setup();
    const busy = attempt(payload({ error_code: 'upstream_busy', error: 'busy' }), at(0), 'dlv_a');
    const timeout = attempt(payload({ error_code: 'upstream_timeout', error: 'timeout' }), at(1000), 'dlv_b');
    expect((await send(busy)).body).toEqual({ received: true });
    expect((await send(timeout)).body).toEqual({ received: true, duplicate: true });
    expect(handler.mock.calls.map(([event]) => event.error_code)).toEqual(['upstream_busy']);
    // Another clip's event is another event.
    expect((await send(attempt(payload({ id: 4243 }), at(0), 'dlv_c'))).body).toEqual({ received: true });
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('runs a video.completed after a video.failed for the same id', async () => {
    const { handler, send } = setup();
    await send(attempt(payload(), at(0), 'dlv_1'));
    const { delivered_at: _, ...completed } = { ...failedEvent({ id: 4242 }), event: 'video.completed', status: 'done', video_url: 'https://x/4242', error: null, error_code: null } as unknown as WebhookEvent;
    expect((await send(attempt(completed, at(0), 'dlv_2'))).status).toBe(200);
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('a captured request replayed under a forged delivery id is a duplicate', async () => {
    const { handler, send } = setup();
    const real = attempt(payload(), at(0), 'dlv_real');
    await send(real);
    const forged = { ...real, headers: { ...real.headers, 'x-service-delivery': 'dlv_forged' } };
    expect((await send(forged)).body).toEqual({ received: true, duplicate: true });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a retry of one delivery (fresh delivered_at and signature) is a duplicate, and so is that retry replayed under a forged id', async () => {
    const { handler, send } = setup();
    const first = attempt(payload(), at(0), 'dlv_1');
    const retry = attempt(payload(), at(30_000), 'dlv_1');
    expect(retry.headers['x-service-signature']).not.toBe(first.headers['x-service-signature']);
    await send(first);
    expect((await send(retry)).body.duplicate).toBe(true);
    // The retry was answered as a duplicate, so its own bytes were never recorded: the key must still match.
    const forged = { ...retry, headers: { ...retry.headers, 'x-service-delivery': 'dlv_forged' } };
    expect((await send(forged)).body.duplicate).toBe(true);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('claims one key per delivery, the signed event\'s: a delivery id seen before with another event is that other event', async () => {
    // Issue 30 item 4: every delivery of one X-Service-Delivery carries one event, so `e:<event>:<clip id>` alone
    // catches its retries; the delivery id is not claimed (it is not signed, and it cost a second key per request).
    const store = new MemoryDeliveryStore({ clock: () => NOW });
    const claimed: string[][] = [];
    const claim = store.claim.bind(store);
    store.claim = (keys, leaseMs, owner) => (claimed.push([...keys]), claim(keys, leaseMs, owner));
    const { handler, send } = setup(store);
    expect((await send(attempt(payload(), at(0), 'dlv_1'))).status).toBe(200);
    expect((await send(attempt(payload(), at(1000), 'dlv_1'))).body.duplicate).toBe(true);
    expect((await send(attempt(payload({ id: 4343 }), at(2000), 'dlv_1'))).body.duplicate).toBeUndefined();
    expect(claimed).toEqual([['e:video.failed:4242'], ['e:video.failed:4242'], ['e:video.failed:4343']]);
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('finds delivered_at wherever it stands and however it is spaced', async () => {
    const { handler, send } = setup();
    const event = failedEvent({ id: 4242, delivered_at: at(0) });
    const spaced = (deliveredAt: string) => JSON.stringify({ ...event, delivered_at: deliveredAt }, null, 2);
    const req = (body: string, id: string) => ({ body, headers: { 'x-service-signature': sign(body, SECRET), 'x-service-delivery': id } });
    await send(req(spaced(at(0)), 'dlv_1'));
    expect((await send(req(spaced(at(5000)), 'dlv_2'))).body.duplicate).toBe(true);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a prompt that mentions "delivered_at" changes nothing', async () => {
    const { handler, send } = setup();
    const tricky = payload({ prompt: `","delivered_at":"${at(0)}` });
    await send(attempt(tricky, at(0), 'dlv_1'));
    expect((await send(attempt(tricky, at(1000), 'dlv_2'))).body.duplicate).toBe(true);
    expect((await send(attempt(payload({ id: 4243, prompt: 'other' }), at(0), 'dlv_3'))).body.duplicate).toBeUndefined();
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('a repeated X-Service-Delivery is a 400, as a repeated signature is', async () => {
    const { handler, send } = setup();
    const req = attempt(payload(), at(0), 'dlv_1');
    // Node and the Fetch API join a repeated field with ", ".
    const joined = await send({ ...req, headers: { ...req.headers, 'x-service-delivery': 'dlv_1, dlv_2' } });
    expect(joined.status).toBe(400);
    expect(joined.body.code).toBe('missing_delivery_id');
    // A header record from Node's req.headersDistinct (or a test harness) gives an array.
    const { receiver } = setup();
    const array = await receiver.receive(Buffer.from(req.body), { ...req.headers, 'x-service-delivery': ['dlv_1', 'dlv_2'] });
    expect(array.status).toBe(400);
    expect(handler).not.toHaveBeenCalled();
  });

  it('reads a deliveries file written with the old keys: a retry of a delivery it holds is still a duplicate', async () => {
    const tmp = await tempDir();
    try {
      const file = tmp.file('deliveries.json');
      // Before issue 10 a row held `d:<delivery id>` and `e:<event>:<video id>`.
      await writeFile(file, JSON.stringify({ version: 1, processed: [['d:dlv_old', 'e:video.failed:4242', NOW - 60_000]] }));
      const store = new FileDeliveryStore({ file, clock: () => NOW });
      const { handler, send } = setup(store);
      expect((await send(attempt(payload(), at(0), 'dlv_old'))).body.duplicate).toBe(true);
      // Issue 30: the key is `e:<event>:<video id>` again, so the old row also makes a copy under a new id a duplicate.
      expect((await send(attempt(payload({ error_code: 'cancelled' }), at(0), 'dlv_new'))).body.duplicate).toBe(true);
      expect((await send(attempt(payload({ id: 4243 }), at(0), 'dlv_other'))).status).toBe(200);
      expect(handler).toHaveBeenCalledTimes(1);
      await store.close();
    } finally {
      await tmp.cleanup();
    }
  });
});
