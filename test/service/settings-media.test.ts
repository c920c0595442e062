import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../src/emitter/index.js';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { mediaFile, type MediaFile } from '../../src/service/resources/videos/media.js';
import { clipPrice, pricingView } from '../../src/service/contract/pricing.js';
import type { Result } from '../../src/service/http/result.js';
import { Service } from '../../src/service/service.js';
import { createKey, listKeys, revokeKey, rotateSecret, setDefaultAssets, topUp } from '../../src/service/settings.js';
import { advanceClock, getClock } from '../../src/service/test-helpers.js';
import { createVideo, getVideo } from '../../src/service/videos/operations.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const services: Service[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.close();
});

async function open(balance = 1000) {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const emitter = { send: async () => undefined, stop: async () => undefined } as unknown as WebhookEmitter;
  const service = await Service.open({ file: false, clock, emitter, balance, random: () => 0.5 });
  services.push(service);
  const guard = await service.guard(`Bearer ${service.first().apiKey}`, { lowBalanceOk: true });
  if (!guard.ok) throw new Error('guard');
  return { service, clock, caller: guard.caller };
}

const body = (result: Result | MediaFile) => ('body' in result ? result.body : result) as Record<string, any>;

describe('account settings (issue 11)', () => {
  it('tops up, which also works below 10 credits, and refuses a bad amount', async () => {
    const { service, caller } = await open(5);
    expect((await service.guard(`Bearer ${service.first().apiKey}`)).ok).toBe(false);
    expect(await topUp(service, caller, { credits: 100 })).toMatchObject({ status: 200, body: { balance: 105, topped_up: true } });
    expect((await service.guard(`Bearer ${service.first().apiKey}`)).ok).toBe(true);
    for (const credits of [0, -5, 1.5, '10', 2_000_000]) expect(await topUp(service, caller, { credits })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
  });

  it('creates keys (shown once) up to 5, needing 240 credits; a revoked key is 401 at once', async () => {
    const { service, caller } = await open(239);
    expect(await createKey(service, caller)).toMatchObject({ status: 402, body: { code: 'insufficient_credits', required: 240, balance: 239 } });
    await topUp(service, caller, { credits: 1 });
    const created = await createKey(service, caller);
    expect(created).toMatchObject({ status: 201, body: { api_key: expect.stringMatching(/^sk_/), webhook_secret: expect.stringMatching(/^whsec_/) } });
    const token = body(created).api_key as string;
    expect((await service.guard(`Bearer ${token}`)).ok).toBe(true);
    const listed = body(listKeys(service, caller)).data as Array<Record<string, unknown>>;
    expect(listed).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(token);
    for (let i = 0; i < 3; i++) expect((await createKey(service, caller)).status).toBe(201);
    expect(await createKey(service, caller)).toMatchObject({ status: 409, body: { code: 'key_limit_reached' } });
    expect(await revokeKey(service, caller, body(created).id)).toMatchObject({ status: 200, body: { revoked: true } });
    expect(await service.guard(`Bearer ${token}`)).toMatchObject({ ok: false, result: { status: 401, body: { code: 'invalid_api_key' } } });
    expect((await revokeKey(service, caller, 'key_nope')).status).toBe(404);
  });

  it('rotates a key\'s webhook secret, shown once, and signs later webhooks with it', async () => {
    const { service, caller } = await open();
    const before = service.first().webhookSecret;
    const rotated = await rotateSecret(service, caller, caller.key.id);
    expect(rotated).toMatchObject({ status: 200, body: { id: caller.key.id, webhook_secret: expect.stringMatching(/^whsec_/) } });
    expect(body(rotated).webhook_secret).not.toBe(before);
    expect(service.first().webhookSecret).toBe(body(rotated).webhook_secret);
  });

  it('sets default assets from the caller\'s own assets only', async () => {
    const { service, caller } = await open();
    expect(await setDefaultAssets(service, caller, caller.key.id, { asset_ids: [1] })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    const { asset } = service.assets.add({ accountId: caller.account.id, sha256: 'a'.repeat(64), name: 'me.jpg', fileSize: 1, mimeType: 'image/jpeg', ext: 'jpg', subjectConsent: 'self' });
    expect(await setDefaultAssets(service, caller, caller.key.id, { asset_ids: [asset.id] })).toMatchObject({ status: 200, body: { default_asset_ids: [asset.id] } });
    expect(await setDefaultAssets(service, caller, caller.key.id, { asset_ids: [1, 2, 3, 4, 5, 6] })).toMatchObject({ status: 400, body: { code: 'too_many_images' } });
  });
});

describe('test helpers: the clock', () => {
  it('shows the clock and advances it, finishing clips on the way', async () => {
    const { service, caller } = await open();
    await createVideo(service, caller, { prompt: 'a' });
    expect(getClock(service)).toMatchObject({ status: 200, body: { now: '2026-01-01T00:00:00.000Z', frozen: true } });
    expect(await advanceClock(service, { seconds: 60 })).toMatchObject({ status: 200, body: { now: '2026-01-01T00:01:00.000Z', advanced_seconds: 60 } });
    expect(body(getVideo(service, caller, '1')).status).toBe('done');
    for (const seconds of [0, -1, 'x', 400 * 86_400, Number.NaN]) expect((await advanceClock(service, { seconds })).status).toBe(400);
  });
});

describe('GET /media (spec 4.18)', () => {
  async function doneClip(prompt = 'a', ratio = '9:16') {
    const opened = await open();
    await createVideo(opened.service, opened.caller, { prompt, ratio });
    await opened.clock.advance(10_000);
    const url = new URL(body(getVideo(opened.service, opened.caller, '1')).video_url as string);
    const query = Object.fromEntries(url.searchParams);
    return { ...opened, query };
  }

  it('serves the clip in its ratio, whole, a Range, an open range and a suffix; 416 past the end; download=1', async () => {
    const { service, query } = await doneClip();
    const whole = await mediaFile(service, '1.mp4', query, undefined);
    expect(whole).toMatchObject({ status: 200, headers: { 'content-type': 'video/mp4', 'accept-ranges': 'bytes' }, start: 0 });
    expect((whole as MediaFile).path).toMatch(/clip-9x16\.mp4$/);
    const size = (whole as MediaFile).end + 1;
    expect(await mediaFile(service, '1.mp4', query, 'bytes=0-99')).toMatchObject({ status: 206, start: 0, end: 99, headers: { 'content-range': `bytes 0-99/${size}`, 'content-length': '100' } });
    expect(await mediaFile(service, '1.mp4', query, 'bytes=100-')).toMatchObject({ status: 206, start: 100, end: size - 1 });
    expect(await mediaFile(service, '1.mp4', query, 'bytes=-10')).toMatchObject({ status: 206, start: size - 10, end: size - 1 });
    expect(await mediaFile(service, '1.mp4', query, `bytes=${size}-`)).toMatchObject({ status: 416, headers: { 'content-range': `bytes */${size}` } });
    expect(await mediaFile(service, '1.mp4', { ...query, download: '1' }, undefined)).toMatchObject({ headers: { 'content-disposition': 'attachment; filename="clip-1.mp4"' } });
  });

  it('is 403 when tampered with, 410 after 7 days, 404 after delete or for a bad name', async () => {
    const { service, clock, caller, query } = await doneClip();
    expect(await mediaFile(service, '1.mp4', { ...query, sig: '0'.repeat(64) }, undefined)).toMatchObject({ status: 403, body: { code: 'invalid_signature' } });
    expect(await mediaFile(service, '1.jpg', query, undefined)).toMatchObject({ status: 403 });
    expect(await mediaFile(service, '1.mp4', { exp: query.exp }, undefined)).toMatchObject({ status: 403 });
    expect(await mediaFile(service, '1.png', query, undefined)).toMatchObject({ status: 404 });
    await clock.advance(7 * 86_400_000);
    expect(await mediaFile(service, '1.mp4', query, undefined)).toMatchObject({ status: 410, body: { code: 'link_expired' } });
    const fresh = new URL(body(getVideo(service, caller, '1')).poster_url as string);
    const freshQuery = Object.fromEntries(fresh.searchParams);
    expect(await mediaFile(service, '1.jpg', freshQuery, undefined)).toMatchObject({ status: 200, headers: { 'content-type': 'image/jpeg' } });
    const { deleteVideo } = await import('../../src/service/videos/operations.js');
    await deleteVideo(service, caller, '1');
    expect(await mediaFile(service, '1.jpg', freshQuery, undefined)).toMatchObject({ status: 404, body: { code: 'not_found' } });
  });

  it('is 409 media_not_ready while a simulate:media_not_ready clip is being saved', async () => {
    const { service, clock, query } = await doneClip('a simulate:media_not_ready');
    expect(await mediaFile(service, '1.mp4', query, undefined)).toMatchObject({ status: 409, body: { code: 'media_not_ready' }, headers: { 'retry-after': expect.any(String) } });
    await clock.advance(30_000);
    expect((await mediaFile(service, '1.mp4', query, undefined)).status).toBe(200);
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
