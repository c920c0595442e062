import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import {
  createReceiver,
  createTestWebhook,
  InvalidPayloadError,
  MemoryDeliveryStore,
  verifyWebhook,
  type VideoFailedEvent,
  type WebhookEvent,
} from '../../src/index.js';
import { ERROR_SENTENCES } from '../../src/protocol/events.js';

const secret = 'whsec_users_own_tests';

function app() {
  const receiver = createReceiver({ secret, store: new MemoryDeliveryStore() });
  const seen: WebhookEvent[] = [];
  receiver.onAny((event) => void seen.push(event));
  const server = express();
  server.post('/webhooks', receiver.express());
  return { receiver, server, seen };
}

describe('createTestWebhook', () => {
  it('builds a realistic, correctly signed request that a receiver accepts and hands over as sent', async () => {
    const { server, seen } = app();
    const webhook = createTestWebhook('video.completed', { secret, event: { prompt: 'a fox in the snow', credits_used: 27 } });
    expect(webhook.headers['x-service-event']).toBe('video.completed');
    expect(webhook.deliveryId).toMatch(/^dlv_[0-9a-f]{24}$/);
    expect(webhook.headers['x-service-delivery']).toBe(webhook.deliveryId);
    expect(JSON.parse(webhook.body)).toEqual(webhook.event);
    expect(webhook.event).toMatchObject({ status: 'done', prompt: 'a fox in the snow', credits_used: 27, error: null, error_code: null });
    expect(webhook.event.video_url).toBe(`https://app.example.com/videos/${webhook.event.id}`);
    expect(Math.abs(Date.parse(webhook.event.delivered_at) - Date.now())).toBeLessThan(5_000);

    const res = await request(server).post('/webhooks').set(webhook.headers).send(webhook.body);
    expect(res.status).toBe(200);
    expect(seen).toEqual([webhook.event]);
  });

  it("gives a video.failed with only an error_code that code's sentence, and keeps an error it is given", () => {
    const failed = createTestWebhook('video.failed', { secret, event: { error_code: 'content_rejected' } });
    const event: VideoFailedEvent = failed.event;
    expect(event).toMatchObject({ status: 'error', video_url: null, error_code: 'content_rejected', error: ERROR_SENTENCES.content_rejected });
    expect(createTestWebhook('video.failed', { secret, event: { error_code: 'upstream_busy', error: null } }).event.error).toBeNull();
  });

  it('verifies with verifyWebhook and through the Fetch adapter; a fixed delivery id makes the second a duplicate', async () => {
    const { receiver } = app();
    const webhook = createTestWebhook('video.failed', { secret, deliveryId: 'dlv_fixed' });
    expect(verifyWebhook(webhook.body, webhook.headers, { secret })).toEqual({ deliveryId: 'dlv_fixed', event: webhook.event });
    const send = () => receiver.fetch(new Request('http://localhost/webhooks', { method: 'POST', headers: webhook.headers, body: webhook.body }));
    expect((await send()).status).toBe(200);
    expect(await (await send()).json()).toEqual({ received: true, duplicate: true });
  });

  it('gives each test webhook a fresh clip id, so two are two events; the same `event.id` twice is one (issue 30: the event key is event and clip id)', async () => {
    const { server, seen } = app();
    const ids = new Set(Array.from({ length: 50 }, () => createTestWebhook('video.completed', { secret }).event.id));
    expect(ids.size).toBe(50);
    for (const webhook of [createTestWebhook('video.failed', { secret }), createTestWebhook('video.failed', { secret })]) {
      expect((await request(server).post('/webhooks').set(webhook.headers).send(webhook.body)).body).toEqual({ received: true });
    }
    const fixed = () => createTestWebhook('video.failed', { secret, event: { id: 77 } });
    const first = fixed();
    expect((await request(server).post('/webhooks').set(first.headers).send(first.body)).status).toBe(200);
    const again = fixed();
    expect((await request(server).post('/webhooks').set(again.headers).send(again.body)).body).toEqual({ received: true, duplicate: true });
    expect(seen).toHaveLength(3);
  });

  it("names the given clip id in a video.completed's video_url, unless the video_url is given too", () => {
    expect(createTestWebhook('video.completed', { secret: 'whsec_x', event: { id: 777 } }).event).toMatchObject({ id: 777, video_url: 'https://app.example.com/videos/777' });
    expect(createTestWebhook('video.completed', { secret: 'whsec_x', event: { id: 778, video_url: 'https://cdn.example.com/a.mp4' } }).event.video_url).toBe('https://cdn.example.com/a.mp4');
  });

  it('sets every time from `now`, so a test can send a delivery outside the replay window', async () => {
    const { server, seen } = app();
    const now = Date.parse('2026-01-02T03:04:05Z');
    const old = createTestWebhook('video.completed', { secret, now });
    expect(old.event).toMatchObject({ delivered_at: '2026-01-02T03:04:05Z', completed_at: '2026-01-02T03:04:05Z', created_at: '2026-01-02T03:02:28Z' });
    const res = await request(server).post('/webhooks').set(old.headers).send(old.body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('stale_delivery');
    expect(seen).toEqual([]);
  });

  it('refuses fields that break the event, an unknown event, and bad options, with typed errors', () => {
    expect(() => createTestWebhook('video.completed', { secret, event: { credits_used: 'many' as unknown as number } })).toThrow(InvalidPayloadError);
    try {
      createTestWebhook('video.completed', { secret, event: { status: 'error' as 'done' } });
      expect.unreachable();
    } catch (error) {
      expect((error as InvalidPayloadError).field).toBe('status');
    }
    expect(() => createTestWebhook('video.created' as 'video.completed', { secret })).toThrow(/`event` must be one of video.completed, video.failed/);
    expect(() => createTestWebhook('video.completed', { secret: '' })).toThrow(/`secret`/);
    expect(() => createTestWebhook('video.completed', undefined as unknown as { secret: string })).toThrow(/options object/);
    expect(() => createTestWebhook('video.completed', { secret, deliveryId: '' })).toThrow(/`deliveryId`/);
    expect(() => createTestWebhook('video.completed', { secret, now: Number.NaN })).toThrow(/`now`/);
  });
});
