import sharp from 'sharp';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, startService, type ServiceApp, type StartedService } from '../../../src/service/http/app.js';
import type { ImageFetcher } from '../../../src/service/service.js';

const apps: ServiceApp[] = [];
const started: StartedService[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const svc of started.splice(0)) await svc.close();
});

async function app(options: { fetchImage?: ImageFetcher } = {}) {
  const made = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true, start: Date.parse('2026-01-01T00:00:00Z') }), random: () => 0.5, warn: () => undefined, ...options });
  apps.push(made);
  return { app: made, auth: `Bearer ${made.service.first().apiKey}` };
}

describe('the service over HTTP', () => {
  it('POST /v1/videos answers 202 with the rate headers; problems are application/problem+json with instance', async () => {
    const { app: handler, auth } = await app();
    const created = await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox' });
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ id: 1, status: 'pending', credits_used: 9 });
    expect(created.headers).toMatchObject({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59', 'content-type': 'application/json; charset=utf-8' });
    expect(Number(created.headers['x-ratelimit-reset'])).toBeGreaterThan(1_700_000_000);
    const bad = await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'x', duration: 99 });
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toBe('application/problem+json');
    expect(bad.body).toMatchObject({ code: 'invalid_duration', instance: '/v1/videos', retryable: false, trace_id: expect.any(String), allowed_values: expect.any(Array) });
    expect(bad.headers['x-ratelimit-remaining']).toBe('58');
  });

  it('answers 401 with WWW-Authenticate, 400 invalid_json, 413 for a large body, 404 and 405 as problems', async () => {
    const { app: handler, auth } = await app();
    const missing = await request(handler).get('/v1/videos');
    expect(missing.status).toBe(401);
    expect(missing.body.code).toBe('invalid_auth_header');
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="cliphook"');
    expect((await request(handler).get('/v1/videos').set('authorization', 'Bearer sk_wrong_key_1')).body.code).toBe('invalid_api_key');
    const broken = await request(handler).post('/v1/videos').set('authorization', auth).set('content-type', 'application/json').send('{"prompt":');
    expect(broken).toMatchObject({ status: 400, body: { code: 'invalid_json' } });
    const big = await request(handler).post('/v1/videos').set('authorization', auth).set('content-type', 'application/json').send(JSON.stringify({ prompt: 'x'.repeat(1_100_000) }));
    expect(big).toMatchObject({ status: 413, body: { code: 'body_too_large' } });
    expect(await request(handler).get('/v2/nothing')).toMatchObject({ status: 404, body: { code: 'not_found', instance: '/v2/nothing' } });
    const wrong = await request(handler).put('/v1/videos');
    expect(wrong).toMatchObject({ status: 405, body: { code: 'method_not_allowed' } });
    expect(wrong.headers.allow).toBe('POST, GET, HEAD');
  });

  it('serves GET /v1/pricing without a key, the settings below 10 credits, and the test clock', async () => {
    const { app: handler, auth } = await app();
    expect((await request(handler).get('/v1/pricing')).body).toMatchObject({ api_discount: 0.1, images: { character: 5 } });
    expect((await request(handler).post('/settings/top-up').set('authorization', auth).send({ credits: 5 })).body).toMatchObject({ balance: 1005 });
    const advanced = await request(handler).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 3600 });
    expect(advanced.body).toMatchObject({ now: '2026-01-01T01:00:00.000Z' });
    expect((await request(handler).get('/test_helpers/clock').set('authorization', auth)).body).toMatchObject({ frozen: true });
  });

  it('streams signed media with Range, and the webhook\'s page link is 401', async () => {
    const { app: handler, auth } = await app();
    await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox', ratio: '1:1' });
    await request(handler).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 60 });
    const shown = await request(handler).get('/v1/videos/1').set('authorization', auth);
    const link = new URL(shown.body.video_url as string);
    const whole = await request(handler).get(`${link.pathname}${link.search}`).buffer(true).parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done(null, Buffer.concat(chunks)));
    });
    expect(whole.status).toBe(200);
    expect(whole.headers['content-type']).toBe('video/mp4');
    expect((whole.body as Buffer).subarray(4, 8).toString('latin1')).toBe('ftyp');
    const part = await request(handler).get(`${link.pathname}${link.search}`).set('range', 'bytes=0-15');
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toMatch(/^bytes 0-15\/\d+$/);
    expect((await request(handler).get(`${link.pathname}?exp=1&sig=${'0'.repeat(64)}`)).body.code).toBe('invalid_signature');
    expect((await request(handler).get('/videos/1')).status).toBe(401);
  });
});

describe('assets and images over HTTP', () => {
  it('uploads a photo (multipart), moderates it on the clock, lists it and serves its public_url', async () => {
    const { app: handler, auth } = await app();
    const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0a0' } }).jpeg().toBuffer();
    const uploaded = await request(handler).post('/v1/assets').set('authorization', auth).field('subject_consent', 'self').attach('file', jpeg, 'me.png');
    expect(uploaded.status).toBe(200);
    expect(uploaded.body).toMatchObject({ id: 1, status: 'pending', mime_type: 'image/jpeg', deduped: false, asset_uri: null });
    expect((await request(handler).get('/v1/assets').set('authorization', auth)).body.total).toBe(0);
    await request(handler).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 60 });
    expect((await request(handler).get('/v1/assets/1').set('authorization', auth)).body).toMatchObject({ status: 'trusted', asset_uri: 'asset://1' });
    const file = await request(handler).get(new URL(uploaded.body.public_url as string).pathname);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('image/jpeg');
    const notMultipart = await request(handler).post('/v1/assets').set('authorization', auth).send({ file: 'x' });
    expect(notMultipart).toMatchObject({ status: 400, body: { code: 'no_file' } });
    expect((await request(handler).post('/v1/videos').set('authorization', auth).send({ asset_ids: [1] })).body).toMatchObject({ asset_source: 'asset_ids', asset_ids_used: [1] });
  });

  it('refuses an upload of 20 MB + 1 byte with 413 too_large while reading it, and keeps nothing', async () => {
    const { app: handler, auth } = await app();
    const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#a00' } }).jpeg().toBuffer();
    const big = Buffer.concat([jpeg, Buffer.alloc(20 * 1024 * 1024 + 1 - jpeg.length, 1)]);
    const refused = await request(handler).post('/v1/assets').set('authorization', auth).attach('file', big, 'big.jpg');
    expect(refused).toMatchObject({ status: 413, body: { code: 'too_large' } });
    const exact = await request(handler).post('/v1/assets').set('authorization', auth).attach('file', big.subarray(0, 20 * 1024 * 1024), 'max.jpg');
    expect(exact).toMatchObject({ status: 200, body: { id: 1, file_size: 20 * 1024 * 1024 } });
  });

  it('makes an image job, waits for it, and serves the file at its permanent link', async () => {
    const { app: handler, auth } = await app();
    const created = await request(handler).post('/v1/images').set('authorization', auth).send({ template: 'poster', fields: { headline: 'Grand opening' } });
    expect(created).toMatchObject({ status: 202, body: { object: 'image_job', status: 'generating', credits_reserved: 2, credits_charged: null } });
    await request(handler).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 10 });
    const done = await request(handler).get('/v1/images/1').set('authorization', auth);
    expect(done.body).toMatchObject({ status: 'done', credits_charged: 2, images: [{ format: 'png' }] });
    const file = await request(handler).get(new URL(done.body.images[0].url as string).pathname).buffer(true).parse((res, callback) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => callback(null, Buffer.concat(chunks)));
    });
    expect(file.headers['content-type']).toBe('image/png');
    expect((await sharp(file.body as Buffer).metadata()).format).toBe('png');
    expect((await request(handler).delete('/v1/images/1').set('authorization', auth)).body).toMatchObject({ deleted: true, images_deleted: 1 });
    expect((await request(handler).get(new URL(done.body.images[0].url as string).pathname)).status).toBe(404);
  });
});

describe('photos in clips', () => {
  it('an AI character is a clip reference by its url with no_real_person, end to end, with no download', async () => {
    const fetched: string[] = [];
    const { app: handler, auth } = await app({ fetchImage: async (url) => (fetched.push(url), { ok: false, code: 'image_fetch_failed', detail: 'no network in tests' }) });
    const job = await request(handler).post('/v1/images').set('authorization', auth).send({ type: 'character', character: { age: '26-35', style: 'photo' } });
    expect(job.status).toBe(202);
    await request(handler).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 300 });
    const done = await request(handler).get('/v1/images/1').set('authorization', auth);
    expect(done.body).toMatchObject({ status: 'done', images: [{ animate: 'trusted', trusted_until: expect.any(String) }, {}, {}, {}] });
    const url = done.body.images[0].url as string;
    const clip = await request(handler).post('/v1/videos').set('authorization', auth).send({ image_urls: [url], subject_consent: 'no_real_person', prompt: 'she waves' });
    expect(clip.status).toBe(202);
    expect(clip.body).toMatchObject({ asset_source: 'image_urls', image_urls: [url], asset_ids_used: [expect.any(Number)], subject_consent: 'no_real_person' });
    expect(fetched).toEqual([]);
  });

  it('answers 503 moderation_pending with the asset_ids to use later when the check is slow, and those assets work once trusted', async () => {
    const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#00f' } }).jpeg().toBuffer();
    const { createHash } = await import('node:crypto');
    const fetchImage: ImageFetcher = async () => ({ ok: true, bytes: jpeg, mime: 'image/jpeg', ext: 'jpg', sha256: createHash('sha256').update(jpeg).digest('hex') });
    const { app: handler, auth } = await app({ fetchImage });
    const slow = await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'a lake simulate:moderation_pending', image_urls: ['https://example.com/lake.jpg'], subject_consent: 'no_real_person' });
    expect(slow).toMatchObject({ status: 503, body: { code: 'moderation_pending', asset_ids: [1], retryable: true } });
    expect(slow.headers['retry-after']).toBeDefined();
    expect((await request(handler).get('/v1/account').set('authorization', auth)).body.balance).toBe(1000);
    await request(handler).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 60 });
    const later = await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'a lake', asset_ids: [1], subject_consent: 'no_real_person' });
    expect(later).toMatchObject({ status: 202, body: { asset_source: 'asset_ids', asset_ids_used: [1] } });
  });
});

describe('startService', () => {
  it('starts on 127.0.0.1 and a free port, with a key, a secret and a clock, in memory', async () => {
    const svc = await startService({ clock: new SimulatedClock({ frozen: true }) });
    started.push(svc);
    expect(svc.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a fox' }) });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { poll_url: string };
    expect(body.poll_url).toBe(`${svc.url}/videos/1`);
    await svc.clock.advance(10_000);
    const polled = (await (await fetch(body.poll_url, { headers: { authorization: `Bearer ${svc.apiKey}` } })).json()) as { status: string; video_url: string };
    expect(polled.status).toBe('done');
    expect((await fetch(polled.video_url)).status).toBe(200);
    expect(svc.webhookSecret).toMatch(/^whsec_/);
  });
});
