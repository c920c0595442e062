import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, expect, it } from 'vitest';
import { createReceiver, MemoryDeliveryStore, type WebhookEvent } from 'cliphook';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { Service } from '../../src/service/service.js';
import { serviceClient } from '../helpers/service-client.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiverApp(secret: string, status = () => 200) {
  const events: Array<{ event: WebhookEvent; deliveryId: string }> = [];
  const receiver = createReceiver({ secret, store: new MemoryDeliveryStore() });
  receiver.onAny((event, { deliveryId }) => void events.push({ event, deliveryId }));
  const app = express();
  let attempts = 0;
  app.post('/webhooks', (req, res, next) => {
    attempts++;
    const code = status();
    if (code !== 200) return void res.status(code).end();
    next();
  }, receiver.express());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, events, attempts: () => attempts };
}

async function service(clock: SimulatedClock) {
  const opened = await Service.open({ file: false, clock, warn: () => undefined });
  cleanups.push(() => opened.close());
  const client = await serviceClient(opened);
  cleanups.push(() => client.close());
  return { service: opened, client };
}

it('a clip with a callback_url reaches createReceiver as a verified video.completed with the fields GET /videos/{id} shows', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const { service: svc, client } = await service(clock);
  const app = await receiverApp(svc.first().webhookSecret);
  const created = await client.post('/videos', { prompt: 'a red fox in the snow', duration: 10, model: 'cinema', callback_url: app.url });
  expect(created.status).toBe(202);
  await clock.advance(10_000);
  await expect.poll(() => app.events.length).toBe(1);
  const { event, deliveryId } = app.events[0]!;
  const shown = (await client.get('/videos/1')).body as Record<string, unknown>;
  expect(event).toMatchObject({ event: 'video.completed', id: shown.id, status: shown.status, prompt: shown.prompt, credits_used: shown.credits_used, duration: shown.duration, model: shown.model, created_at: shown.created_at, completed_at: shown.completed_at });
  expect(deliveryId).toMatch(/^dlv_/);
  // The webhook's video_url is the clip's page, as spec 6.5 says; GET /videos/{id} gives the signed link.
  expect(event.video_url).toBe(`${svc.origin}/videos/1`);
});

it('retries a failing receiver on the spec schedule as the simulated clock moves, with the same delivery id', async () => {
  const clock = new SimulatedClock({ frozen: true });
  const { service: svc, client } = await service(clock);
  let failures = 2;
  const app = await receiverApp(svc.first().webhookSecret, () => (failures-- > 0 ? 503 : 200));
  expect((await client.post('/videos', { prompt: 'x simulate:upstream_busy', callback_url: app.url })).status).toBe(202);
  await clock.advance(10_000);
  await expect.poll(() => app.attempts()).toBe(1);
  await clock.advance(30_000);
  await expect.poll(() => app.attempts()).toBe(2);
  await clock.advance(120_000);
  await expect.poll(() => app.events.length).toBe(1);
  expect(app.events[0]!.event).toMatchObject({ event: 'video.failed', error_code: 'upstream_busy', credits_used: 0 });
  const [delivery] = svc.emitter.list();
  expect(delivery?.attempts.map((a) => a.status)).toEqual([503, 503, 200]);
});

it('a webhook whose queueing a crash left unrecorded is not sent twice after the restart (one delivery id per clip)', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-webhook-once-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'service.json');
  const clock = new SimulatedClock({ frozen: true });
  const first = await Service.open({ file, clock, warn: () => undefined });
  const app = await receiverApp(first.first().webhookSecret);
  const client = await serviceClient(first);
  expect((await client.post('/videos', { prompt: 'a fox', callback_url: app.url })).status).toBe(202);
  await client.close();
  await clock.advance(10_000);
  await expect.poll(() => app.events.length).toBe(1);
  // A crash after the emitter saved the delivery and before the clip's mark was written.
  const video = first.state.videos.get(1)!;
  video.webhookQueued = false;
  first.store.table('video').put(video);
  await first.close();
  const second = await Service.open({ file, clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
  cleanups.push(() => second.close());
  // The restart hands the clip's webhook to the emitter again; the emitter already holds its delivery id.
  await expect.poll(() => second.state.videos.get(1)?.webhookQueued).toBe(true);
  expect(second.emitter.list()).toHaveLength(1);
  expect(app.attempts()).toBe(1);
});
