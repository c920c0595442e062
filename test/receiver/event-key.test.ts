// Issue 30 item 2: an event's identity is its name and its clip id (a clip ends once), so every copy of
// it — an attempt with a fresh delivered_at, a copy under another delivery id, a copy rebuilt from GET
// /videos with a freshly signed video_url — is one event, on the Node and the web receiver alike.
import { describe, expect, it, vi } from 'vitest';
import { MemoryDeliveryStore, createReceiver } from '../../src/index.js';
import { createReceiver as createWebReceiver } from '../../src/web.js';
import { eventKey } from '../../src/receiver/event-key.js';
import { SECRET, completedEvent, signedRequest } from '../helpers/webhooks.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const at = (offsetMs = 0) => new Date(NOW + offsetMs).toISOString();

describe('eventKey', () => {
  it('is e:<event>:<clip id>', () => {
    expect(eventKey({ event: 'video.completed', id: 48213 })).toBe('e:video.completed:48213');
    expect(eventKey(completedEvent({ id: 7, video_url: 'https://a/1' }))).toBe(eventKey(completedEvent({ id: 7, video_url: 'https://b/2' })));
  });

  it('a copy of an event whose body differs (a re-signed video_url, another delivery id) is a duplicate on both receivers', async () => {
    for (const make of [createReceiver, createWebReceiver]) {
      const store = new MemoryDeliveryStore({ clock: () => NOW });
      const receiver = make({ secret: SECRET, store, clock: () => NOW });
      const handler = vi.fn();
      receiver.onAny(handler);
      const webhook = signedRequest(completedEvent({ id: 4242, video_url: 'https://app.example.com/videos/4242', delivered_at: at() }), { deliveryId: 'dlv_1' });
      const rebuilt = signedRequest(completedEvent({ id: 4242, video_url: 'https://svc.example.com/v1/media/4242.mp4?exp=1&sig=ab', delivered_at: at(1000) }), { deliveryId: 'dlv_2' });
      expect(JSON.parse((await receiver.receive(Buffer.from(webhook.body), webhook.headers)).body)).toEqual({ received: true });
      expect(JSON.parse((await receiver.receive(Buffer.from(rebuilt.body), rebuilt.headers)).body)).toEqual({ received: true, duplicate: true });
      expect(handler).toHaveBeenCalledTimes(1);
    }
  });

  it('the web receiver keys an event without crypto.subtle.digest', async () => {
    const digest = vi.spyOn(crypto.subtle, 'digest');
    try {
      const receiver = createWebReceiver({ secret: SECRET, clock: () => NOW });
      const req = signedRequest(completedEvent({ id: 9, delivered_at: at() }));
      expect((await receiver.receive(new TextEncoder().encode(req.body), req.headers)).status).toBe(200);
      expect(digest).not.toHaveBeenCalled();
    } finally {
      digest.mockRestore();
    }
  });
});
