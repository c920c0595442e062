import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service, type ServiceOptions } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// The fine print of issue 21: what a line-by-line audit of the spec found a hand-written contract got wrong.

const open: Array<{ service: Service; client: ServiceClient }> = [];
afterEach(async () => {
  for (const { service, client } of open.splice(0)) {
    await client.close();
    await service.close();
  }
});

async function start(options: ServiceOptions = {}) {
  const clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-03-01T00:00:00Z') });
  const service = await Service.open({ file: false, clock, random: () => 0.5, ...options });
  const client = await serviceClient(service);
  open.push({ service, client });
  return { service, client, clock };
}

const photo = (colour: string) => sharp({ create: { width: 16, height: 16, channels: 3, background: colour } }).png().toBuffer();

async function upload(client: ServiceClient, bytes: Buffer, consent?: string) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)], { type: 'image/png' }), 'photo.png');
  if (consent) form.append('subject_consent', consent);
  const res = await fetch(`${client.origin}/v1/assets`, { method: 'POST', headers: { authorization: `Bearer ${(open.at(-1)!.service).first().apiKey}` }, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('batch defaults against aliases', () => {
  it("fills only what an item leaves out, after the item's aliases are resolved", async () => {
    const fetched: string[] = [];
    const { client } = await start({ fetchImage: async (url) => (fetched.push(url), { ok: true }) });
    const batch = await client.post('/videos/batch', { defaults: { ratio: '9:16', image_urls: ['https://photos.example/a.jpg'], subject_consent: 'self' }, items: [{ prompt: 'a', aspect_ratio: '1:1' }, { prompt: 'b' }, { prompt: 'c', image_url: 'https://photos.example/c.jpg' }] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(207);
    expect(batch.body.items.map((item: { ratio: string }) => item.ratio)).toEqual(['1:1', '9:16', '9:16']);
    // The item's own image_url replaced the defaults' image_urls; it did not join them.
    expect(fetched.filter((url) => url.endsWith('/c.jpg'))).toHaveLength(1);
    expect(fetched.filter((url) => url.endsWith('/a.jpg'))).toHaveLength(2);
  });

  it('still refuses one request whose field and alias disagree, with the field code', async () => {
    const { client } = await start();
    const refused = await client.post('/videos', { prompt: 'a', ratio: '9:16', aspect_ratio: '1:1' });
    expect(refused).toMatchObject({ status: 400, body: { code: 'invalid_ratio' } });
  });
});

describe('the 402 floor comes right after authentication', () => {
  it('answers 402 below 10 credits whatever else is wrong with the request, on every keyed route', async () => {
    const { client } = await start({ balance: 8 });
    for (const [method, path, body, headers] of [
      ['POST', '/videos', '{"prompt": ', {}],
      ['POST', '/videos', { prompt: 'a' }, { 'idempotency-key': 'bad key with spaces' }],
      ['POST', '/videos/batch', { items: [] }, {}],
      ['POST', '/images', { count: 2 }, {}],
      ['POST', '/videos/999/retry', undefined, {}],
      ['GET', '/videos?limit=0', undefined, {}],
      ['GET', '/account', undefined, {}],
    ] as const) {
      const answer = await client.call(method, path, { body, headers });
      expect(answer, `${method} ${path}`).toMatchObject({ status: 402, body: { code: 'insufficient_credits', balance: 8, required: 10 } });
    }
  });
});

describe('a clip cancelled by DELETE', () => {
  it('carries error_code cancelled and its sentence (spec 2.9)', async () => {
    const { client } = await start();
    const created = await client.post('/videos', { prompt: 'a fox' });
    expect((await client.delete(`/videos/${created.body.id}`)).body).toMatchObject({ action: 'cancelled', credits_refunded: created.body.credits_used });
    const cancelled = await client.get(`/videos/${created.body.id}`);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', error_code: 'cancelled', error: expect.stringMatching(/cancelled/), refunded: true });
  });
});

describe('animate and the consent recorded with a photo', () => {
  it('an image edited from a photo uploaded with permission stays an image (animate no), though the edit sends no consent', async () => {
    const { client, clock } = await start();
    const asset = await upload(client, await photo('#aa3344'), 'permission');
    expect(asset.body).toMatchObject({ subject_consent: 'permission' });
    await clock.advance(60_000);
    const job = await client.post('/images', { description: 'make it a watercolour', asset_ids: [asset.body.id] });
    expect(job.status, JSON.stringify(job.body)).toBe(202);
    await clock.advance(120_000);
    const done = await client.get(`/images/${job.body.id}`);
    expect(done.body).toMatchObject({ status: 'done', images: [{ animate: 'no' }] });
  });

  it('an own photo (self) edited gives animate ok; the request consent counts before the recorded one', async () => {
    const { client, clock } = await start();
    const asset = await upload(client, await photo('#33aa44'), 'permission');
    await clock.advance(60_000);
    const job = await client.post('/images', { description: 'make it a watercolour', asset_ids: [asset.body.id], subject_consent: 'self' });
    await clock.advance(120_000);
    expect((await client.get(`/images/${job.body.id}`)).body).toMatchObject({ status: 'done', images: [{ animate: 'ok' }] });
  });

  it('a second upload of the same bytes with a consent records the consent given; one without leaves it', async () => {
    const { client } = await start();
    const bytes = await photo('#3344aa');
    const first = await upload(client, bytes);
    expect(first.body).toMatchObject({ deduped: false, subject_consent: null });
    const second = await upload(client, bytes, 'third_party_with_permission');
    expect(second.body).toMatchObject({ id: first.body.id, deduped: true, subject_consent: 'permission' });
    const third = await upload(client, bytes);
    expect(third.body).toMatchObject({ id: first.body.id, deduped: true, subject_consent: 'permission' });
    expect((await client.get(`/assets/${first.body.id}`)).body).toMatchObject({ subject_consent: 'permission' });
  });
});

describe("asset moderation keeps the spec's 5-60 s at realistic speed", () => {
  for (const [random, ends] of [[0, 5_000], [1, 60_000]] as const) {
    it(`ends at ${ends / 1000} s when the draw is ${random}`, async () => {
      const { client, clock } = await start({ speed: 'realistic', random: () => random });
      const asset = await upload(client, await photo(random ? '#111111' : '#222222'), 'self');
      expect(asset.body).toMatchObject({ status: 'pending' });
      await clock.advance(ends - 1_000);
      expect((await client.get(`/assets/${asset.body.id}`)).body).toMatchObject({ status: 'pending' });
      await clock.advance(1_000);
      expect((await client.get(`/assets/${asset.body.id}`)).body).toMatchObject({ status: 'trusted' });
    });
  }
});

describe('reference video and audio', () => {
  it('are refused with 400 reference_media_unavailable on a clip, a batch item and its defaults; null is absent', async () => {
    const { client, service } = await start();
    const balance = service.first().balance;
    for (const [path, body, index] of [
      ['/videos', { prompt: 'a fox', audio_url: 'https://sounds.example/a.mp3' }, undefined],
      ['/videos', { prompt: 'a fox', video_urls: ['https://clips.example/v.mp4'] }, undefined],
      ['/videos/batch', { items: [{ prompt: 'a' }, { prompt: 'b', video_url: 'https://clips.example/v.mp4' }] }, 1],
    ] as const) {
      const refused = await client.post(path, body);
      expect(refused, JSON.stringify(body)).toMatchObject({ status: 400, body: { code: 'reference_media_unavailable', ...(index === undefined ? {} : { item_index: index }) } });
    }
    expect(service.first().balance).toBe(balance);
    expect((await client.post('/videos', { prompt: 'a fox', video_url: null })).status).toBe(202);
  });
});

describe('media 302 (spec 4.18)', () => {
  it('with mediaRedirect a good link answers 302 to a short-lived storage link serving the same bytes, Range too; a bad signature is still 403', async () => {
    const { client, clock } = await start({ mediaRedirect: true });
    const created = await client.post('/videos', { prompt: 'a fox' });
    await clock.advance(30_000);
    const done = await client.get(`/videos/${created.body.id}`);
    expect(done.body.status).toBe('done');
    const link = new URL(done.body.video_url);
    const local = `${client.origin}${link.pathname}${link.search}`;
    const redirect = await fetch(local, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const location = new URL(redirect.headers.get('location')!);
    expect(location.pathname).toBe(`/storage/${created.body.id}.mp4`);
    const followed = await fetch(`${client.origin}${location.pathname}${location.search}`);
    expect(followed.status).toBe(200);
    const bytes = Buffer.from(await followed.arrayBuffer());
    expect(bytes.length).toBeGreaterThan(0);
    const range = await fetch(`${client.origin}${location.pathname}${location.search}`, { headers: { range: 'bytes=0-9' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer())).toEqual(bytes.subarray(0, 10));
    const tampered = await fetch(local.replace(/sig=[^&]+/, 'sig=0000'), { redirect: 'manual' });
    expect(tampered.status).toBe(403);
    await clock.advance(61_000);
    expect((await fetch(`${client.origin}${location.pathname}${location.search}`)).status).toBe(410);
  });
});

describe('retryable on 402 and 451', () => {
  it('402 is retryable (it succeeds unchanged after a top-up) with no retry_after, as spec 7 defines retryable', async () => {
    const { client } = await start({ balance: 5 });
    const refused = await client.post('/videos', { prompt: 'a fox' });
    expect(refused.body).toMatchObject({ code: 'insufficient_credits', retryable: true, retry_after: null, user_action: { kind: 'top_up' } });
    expect(refused.headers['retry-after']).toBeUndefined();
  });

  it('451 is retryable (from a supported country) with no retry_after', async () => {
    const { client } = await start();
    const refused = await client.post('/videos', { prompt: 'a fox simulate:region_unavailable' });
    expect(refused).toMatchObject({ status: 451, body: { code: 'region_unavailable', retryable: true, retry_after: null } });
  });
});
