import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../src/emitter/index.js';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { clipPrice, pricingView } from '../../src/service/contract/pricing.js';
import { Service } from '../../src/service/service.js';
import { callerOf, serviceClient, type ServiceClient } from '../helpers/service-client.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const opened: Array<{ service: Service; client: ServiceClient }> = [];
afterEach(async () => {
  for (const { service, client } of opened.splice(0)) {
    await client.close();
    await service.close();
  }
});

async function open(balance = 1000) {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const emitter = { send: async () => undefined, stop: async () => undefined } as unknown as WebhookEmitter;
  const service = await Service.open({ file: false, clock, emitter, balance, random: () => 0.5 });
  const client = await serviceClient(service);
  opened.push({ service, client });
  return { service, clock, client, caller: callerOf(service) };
}

describe('account settings (issue 11)', () => {
  it('tops up, which also works below 10 credits, and refuses a bad amount', async () => {
    const { client } = await open(5);
    expect((await client.get('/account')).status).toBe(402);
    expect(await client.post('/settings/top-up', { credits: 100 })).toMatchObject({ status: 200, body: { balance: 105, topped_up: true } });
    expect((await client.get('/account')).status).toBe(200);
    for (const credits of [0, -5, 1.5, '10', 2_000_000]) expect(await client.post('/settings/top-up', { credits })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
  });

  it('creates keys (shown once) up to 5, needing 240 credits; a revoked key is 401 at once', async () => {
    const { client } = await open(239);
    expect(await client.post('/settings/keys')).toMatchObject({ status: 402, body: { code: 'insufficient_credits', required: 240, balance: 239 } });
    await client.post('/settings/top-up', { credits: 1 });
    const created = await client.post('/settings/keys');
    expect(created).toMatchObject({ status: 201, body: { api_key: expect.stringMatching(/^sk_/), webhook_secret: expect.stringMatching(/^whsec_/) } });
    const token = created.body.api_key as string;
    expect((await client.get('/account', { key: token })).status).toBe(200);
    const listed = (await client.get('/settings/keys')).body.data as Array<Record<string, unknown>>;
    expect(listed).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(token);
    for (let i = 0; i < 3; i++) expect((await client.post('/settings/keys')).status).toBe(201);
    expect(await client.post('/settings/keys')).toMatchObject({ status: 409, body: { code: 'key_limit_reached' } });
    expect(await client.delete(`/settings/keys/${created.body.id}`)).toMatchObject({ status: 200, body: { revoked: true } });
    expect(await client.get('/account', { key: token })).toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
    expect((await client.delete('/settings/keys/key_nope')).status).toBe(404);
  });

  it("rotates a key's webhook secret, shown once, and signs later webhooks with it", async () => {
    const { service, client, caller } = await open();
    const before = service.first().webhookSecret;
    const rotated = await client.post(`/settings/keys/${caller.key.id}/rotate-secret`);
    expect(rotated).toMatchObject({ status: 200, body: { id: caller.key.id, webhook_secret: expect.stringMatching(/^whsec_/) } });
    expect(rotated.body.webhook_secret).not.toBe(before);
    expect(service.first().webhookSecret).toBe(rotated.body.webhook_secret);
  });

  it("sets default assets from the caller's own assets only", async () => {
    const { service, client, caller } = await open();
    const path = `/settings/keys/${caller.key.id}/default-assets`;
    expect(await client.call('PUT', path, { body: { asset_ids: [1] } })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    const { asset } = service.state.assets.add({ accountId: caller.account.id, sha256: 'a'.repeat(64), name: 'me.jpg', fileSize: 1, mimeType: 'image/jpeg', ext: 'jpg', subjectConsent: 'self' });
    expect(await client.call('PUT', path, { body: { asset_ids: [asset.id] } })).toMatchObject({ status: 200, body: { default_asset_ids: [asset.id] } });
    expect(await client.call('PUT', path, { body: { asset_ids: [1, 2, 3, 4, 5, 6] } })).toMatchObject({ status: 400, body: { code: 'too_many_images' } });
  });
});

describe('test helpers: the clock', () => {
  it('shows the clock and advances it, finishing clips on the way', async () => {
    const { client } = await open();
    await client.post('/videos', { prompt: 'a' });
    expect(await client.get('/test_helpers/clock')).toMatchObject({ status: 200, body: { now: '2026-01-01T00:00:00.000Z', frozen: true } });
    expect(await client.post('/test_helpers/clock/advance', { seconds: 60 })).toMatchObject({ status: 200, body: { now: '2026-01-01T00:01:00.000Z', advanced_seconds: 60 } });
    expect((await client.get('/videos/1')).body.status).toBe('done');
    for (const seconds of [0, -1, 'x', 400 * 86_400, null]) expect((await client.post('/test_helpers/clock/advance', { seconds })).status).toBe(400);
  });
});

describe('GET /media (spec 4.18)', () => {
  async function doneClip(prompt = 'a', ratio = '9:16') {
    const started = await open();
    await started.client.post('/videos', { prompt, ratio });
    await started.clock.advance(10_000);
    const url = new URL((await started.client.get('/videos/1')).body.video_url as string);
    const query = Object.fromEntries(url.searchParams);
    /** GET /v1/media/{file} with `query` and an optional Range: status, headers and the bytes. */
    const media = async (file: string, q: Record<string, string>, range?: string) => {
      const res = await fetch(`${started.client.origin}/v1/media/${file}?${new URLSearchParams(q)}`, { headers: range ? { range } : {} });
      const bytes = Buffer.from(await res.arrayBuffer());
      const headers = Object.fromEntries(res.headers);
      return { status: res.status, headers, bytes, body: headers['content-type']?.includes('json') ? JSON.parse(bytes.toString()) : undefined };
    };
    return { ...started, query, media };
  }

  it('serves the clip in its ratio, whole, a Range, an open range and a suffix; 416 past the end; download=1', async () => {
    const { query, media } = await doneClip();
    const whole = await media('1.mp4', query);
    expect(whole).toMatchObject({ status: 200, headers: { 'content-type': 'video/mp4', 'accept-ranges': 'bytes' } });
    const { readFileSync } = await import('node:fs');
    expect(whole.bytes.equals(readFileSync(new URL('../../templates/media/clip-9x16.mp4', import.meta.url)))).toBe(true);
    const size = whole.bytes.length;
    expect(await media('1.mp4', query, 'bytes=0-99')).toMatchObject({ status: 206, headers: { 'content-range': `bytes 0-99/${size}`, 'content-length': '100' } });
    const open = await media('1.mp4', query, 'bytes=100-');
    expect(open).toMatchObject({ status: 206, headers: { 'content-range': `bytes 100-${size - 1}/${size}` } });
    expect(open.bytes.equals(whole.bytes.subarray(100))).toBe(true);
    const suffix = await media('1.mp4', query, 'bytes=-10');
    expect(suffix).toMatchObject({ status: 206, headers: { 'content-range': `bytes ${size - 10}-${size - 1}/${size}` } });
    expect(suffix.bytes.equals(whole.bytes.subarray(size - 10))).toBe(true);
    expect(await media('1.mp4', query, `bytes=${size}-`)).toMatchObject({ status: 416, headers: { 'content-range': `bytes */${size}` } });
    expect(await media('1.mp4', { ...query, download: '1' })).toMatchObject({ headers: { 'content-disposition': 'attachment; filename="clip-1.mp4"' } });
  });

  it('is 403 when tampered with, 410 after 7 days, 404 after delete or for a bad name', async () => {
    const { client, clock, query, media } = await doneClip();
    expect(await media('1.mp4', { ...query, sig: '0'.repeat(64) })).toMatchObject({ status: 403, body: { code: 'invalid_signature' } });
    expect(await media('1.jpg', query)).toMatchObject({ status: 403 });
    expect(await media('1.mp4', { exp: query.exp! })).toMatchObject({ status: 403 });
    expect(await media('1.png', query)).toMatchObject({ status: 404 });
    await clock.advance(7 * 86_400_000);
    expect(await media('1.mp4', query)).toMatchObject({ status: 410, body: { code: 'link_expired' } });
    const fresh = new URL((await client.get('/videos/1')).body.poster_url as string);
    const freshQuery = Object.fromEntries(fresh.searchParams);
    expect(await media('1.jpg', freshQuery)).toMatchObject({ status: 200, headers: { 'content-type': 'image/jpeg' } });
    expect((await client.delete('/videos/1')).status).toBe(200);
    expect(await media('1.jpg', freshQuery)).toMatchObject({ status: 404, body: { code: 'not_found' } });
  });

  it('is 409 media_not_ready while a simulate:media_not_ready clip is being saved', async () => {
    const { clock, query, media } = await doneClip('a simulate:media_not_ready');
    expect(await media('1.mp4', query)).toMatchObject({ status: 409, body: { code: 'media_not_ready' }, headers: { 'retry-after': expect.any(String) } });
    await clock.advance(30_000);
    expect((await media('1.mp4', query)).status).toBe(200);
  });
});

describe('GET /pricing', () => {
  it('lists every model with the table\'s prices, the discount and the image prices', () => {
    const view = pricingView();
    expect(view.api_discount).toBe(0.1);
    expect(view.models.find((m) => m.id === 'cinema-fullhd')).toMatchObject({ resolution: '1080p', credits_per_second: 15, max_duration: 30, examples: { '5s': 68, '10s': 135, '15s': 203, '30s': 405 } });
    expect(view.models.find((m) => m.id === 'standard')?.examples).toEqual({ '5s': clipPrice('standard', 5), '10s': 18, '15s': 27 });
    expect(view.images).toMatchObject({ standard: { '1': 2, '4': 7 }, hd: { '1': 4, '4': 14 }, character: 5 });
  });
});
