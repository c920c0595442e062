import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { ImageFiles } from '../../../../src/service/resources/images/characters.js';
import { Service, type ImageFetcher } from '../../../../src/service/service.js';
import { serviceClient, callerOf, type Answer, type ServiceClient } from '../../../helpers/service-client.js';
import { waiting } from '../../../helpers/waiting.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const DAY = 86_400_000;
const services: Service[] = [];
const clients: ServiceClient[] = [];
const hooks: ImageFiles[] = [];
const hookErrors: Error[] = [];
afterEach(async () => {
  for (const hook of hooks.splice(0)) hook.stop();
  for (const client of clients.splice(0)) await client.close();
  for (const service of services.splice(0)) await service.close();
});

const fakeEmitter = () => ({ send: async () => undefined, stop: async () => undefined }) as unknown as WebhookEmitter;

/**
 * What an image job's end is followed by (a character's photos become assets, a deleted job loses its
 * images), attached once more to the service's jobs: Service.open attaches its own, a second one must
 * change nothing. Also where the character photo behind an image link is looked up (`character`).
 */
function attachImageFiles(service: Service): ImageFiles {
  const files = new ImageFiles({
    store: service.store, jobs: service.state.images, assets: service.state.assets, assetCommands: service.assets, files: service.files,
    site: service, onError: (error) => void hookErrors.push(error),
  });
  hooks.push(files);
  return files;
}

// A service in memory on a frozen clock, served through the real app (contract, pipeline, answers).
async function open({ register = false, ...options }: { balance?: number; fetchImage?: ImageFetcher; register?: boolean } = {}) {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const service = await Service.open({ file: false, clock, emitter: fakeEmitter(), random: () => 0.5, ...options });
  services.push(service);
  if (register) attachImageFiles(service);
  const client = await serviceClient(service);
  clients.push(client);
  return { service, clock, client, caller: callerOf(service) };
}

const created = async (answer: Promise<Answer>) => {
  const result = await answer;
  expect(result.status).toBe(202);
  return result.body as Record<string, any>;
};

/**
 * Moves the clock past a job's end and waits for it: the renderer draws with sharp in real time, after
 * the simulated instant fires.
 */
async function finish(client: ServiceClient, clock: SimulatedClock, id: number, ms = 5_000) {
  const ended = await waiting(clock, () => client.get(`/images/${id}?wait=30`));
  await clock.advance(ms);
  return (await ended.answer).body as Record<string, any>;
}

const fileName = (url: string) => url.split('/').pop()!;

describe('POST /images (spec 4.7, 3.3)', () => {
  it('answers 202 generating with credits reserved, then done: files on disk that decode, exact charge', async () => {
    const { service, clock, client, caller } = await open();
    const job = await created(client.post('/images', { description: 'a lighthouse at dusk', count: 4 }));
    expect(job).toMatchObject({ id: 1, object: 'image_job', status: 'generating', type: 'image', quality: 'standard', aspect_ratio: '1:1', count: 4, credits_reserved: 7, credits_charged: null, images: [], estimated_time_seconds: 2, poll_url: 'http://127.0.0.1:8080/v1/images/1' });
    expect(job).not.toHaveProperty('credits_refunded');
    expect(caller.account.balance).toBe(993);
    const done = await finish(client, clock, job.id);
    expect(done).toMatchObject({ status: 'done', credits_charged: 7, credits_refunded: 0, estimated_time_seconds: 0 });
    expect(done.images).toHaveLength(4);
    for (const image of done.images) {
      expect(image).toMatchObject({ format: 'jpeg', animate: 'ok', trusted_until: null });
      const file = service.images.file(fileName(image.url));
      expect(file?.mime).toBe('image/jpeg');
      expect(await sharp(file!.path).metadata()).toMatchObject({ format: 'jpeg', width: image.width, height: image.height });
      const thumb = service.images.file(fileName(image.thumbnail_url));
      expect(thumb?.mime).toBe('image/webp');
      expect(await sharp(thumb!.path).metadata()).toMatchObject({ format: 'webp', width: 320 });
    }
    expect(caller.account.balance).toBe(993);
  });

  it('simulate:partial with count 4: 3 images and the exact unused part refunded', async () => {
    const { clock, client, caller } = await open();
    const job = await created(client.post('/images', { description: 'a garden simulate:partial', count: 4, quality: 'hd' }));
    const ended = await finish(client, clock, job.id);
    expect(ended).toMatchObject({ status: 'partial', credits_reserved: 14, credits_charged: 11, credits_refunded: 3 });
    expect(ended.images).toHaveLength(3);
    expect(caller.account.balance).toBe(1000 - 11);
  });

  it('simulate:fail:copyright_blocked ends failed with its error_code, nothing charged', async () => {
    const { clock, client, caller } = await open();
    const job = await created(client.post('/images', { description: 'a famous logo simulate:fail:copyright_blocked' }));
    expect(caller.account.balance).toBe(998);
    expect(await finish(client, clock, job.id)).toMatchObject({ status: 'failed', error_code: 'copyright_blocked', credits_charged: 0, credits_refunded: 2, images: [] });
    expect(caller.account.balance).toBe(1000);
  });

  it('answers the request-level markers with their problem, reserving nothing and making no job', async () => {
    const { client, caller } = await open();
    const cases = [['prompt_blocked', 422], ['document_blocked', 422], ['religious_text', 422], ['minor_blocked', 422], ['upstream_busy', 503], ['generation_paused', 503], ['moderation_pending', 503]] as const;
    for (const [code, status] of cases) {
      const result = await client.post('/images', { description: `a card simulate:${code}` });
      expect(result).toMatchObject({ status, body: { code } });
      if (status === 503) expect(result.headers['retry-after']).toBe('5');
    }
    expect(await client.post('/images', { description: 'x simulate:request:upstream_busy' })).toMatchObject({ status: 503 });
    expect(caller.account.balance).toBe(1000);
    expect((await client.get('/images')).body.data).toEqual([]);
  });

  it('refuses what the contract refuses, and 402 with required and balance when the balance is short', async () => {
    const { client, caller } = await open({ balance: 12 });
    expect(await client.post('/images', {})).toMatchObject({ status: 400, body: { code: 'missing_input' } });
    expect(await client.post('/images', { template: 'poster' })).toMatchObject({ status: 400, body: { code: 'field_required' } });
    expect(await client.post('/images', { description: 'x', count: 4, quality: 'hd' })).toMatchObject({ status: 402, body: { code: 'insufficient_credits', required: 14, balance: 12 } });
    expect(caller.account.balance).toBe(12);
  });

  it('takes only the caller\'s own usable assets (400 invalid_asset_id / invalid_image_url) and checks external URLs', async () => {
    const fetched: string[] = [];
    const fetchImage: ImageFetcher = async (url) => {
      fetched.push(url);
      if (url.includes('gone')) return { ok: false, code: 'image_fetch_failed', detail: 'HTTP 404' };
      if (url.includes('private')) return { ok: false, code: 'invalid_image_url', detail: 'a private address' };
      return { ok: true };
    };
    const { service, clock, client, caller } = await open({ fetchImage });
    const other = service.accounts.create({ balance: 100 });
    const photo = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#808000' } }).png().toBuffer();
    const sha = 'f'.repeat(64);
    const file = { sha256: sha, name: 'vase.png', fileSize: photo.length, mimeType: 'image/png', ext: 'png', subjectConsent: 'no_real_person' as const };
    const mine = service.state.assets.add({ ...file, accountId: caller.account.id }).asset;
    const theirs = service.state.assets.add({ ...file, accountId: other.account.id }).asset;
    mkdirSync(dirname(service.files.asset(sha, 'png')), { recursive: true });
    writeFileSync(service.files.asset(sha, 'png'), photo);
    const edit = (extra: Record<string, unknown>) => client.post('/images', { description: 'a vase on marble', subject_consent: 'no_real_person', ...extra });
    expect(await edit({ asset_ids: [mine.id] })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    await clock.advance(2_000);
    expect(await edit({ asset_ids: [theirs.id] })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    expect(await edit({ image_urls: [`asset://${theirs.id}`] })).toMatchObject({ status: 400, body: { code: 'invalid_image_url' } });
    expect(await edit({ image_urls: ['https://example.com/gone.jpg'] })).toMatchObject({ status: 422, body: { code: 'image_fetch_failed' } });
    expect(await edit({ image_urls: ['https://example.com/private.jpg'] })).toMatchObject({ status: 400, body: { code: 'invalid_image_url' } });
    expect(await client.post('/images', { description: 'a vase', image_urls: ['https://example.com/a.jpg'] })).toMatchObject({ status: 422, body: { code: 'consent_required' } });
    expect(caller.account.balance).toBe(1000);
    const job = await created(edit({ asset_ids: [mine.id], image_urls: [`asset://${mine.id}`, 'https://example.com/ok.jpg'] }));
    expect(fetched).toEqual(['https://example.com/gone.jpg', 'https://example.com/private.jpg', 'https://example.com/ok.jpg']);
    expect(await finish(client, clock, job.id)).toMatchObject({ status: 'done', images: [{ animate: 'ok' }] });
  });

  it('replays an idempotent request with Idempotent-Replayed, refuses another body under the key, and releases a failed one', async () => {
    const { client, caller } = await open();
    const keyed = (description: string, key: string) => client.post('/images', { description }, { headers: { 'idempotency-key': key } });
    const first = await keyed('a fox', 'img-1');
    expect(first.status).toBe(202);
    expect(first.headers).not.toHaveProperty('idempotent-replayed');
    const replay = await keyed('a fox', 'img-1');
    expect(replay).toMatchObject({ status: 202, headers: { 'idempotent-replayed': 'true' } });
    expect(replay.body).toEqual(first.body);
    expect(await keyed('a cat', 'img-1')).toMatchObject({ status: 422, body: { code: 'idempotency_key_reused' } });
    expect(await keyed('x simulate:upstream_busy', 'img-2')).toMatchObject({ status: 503 });
    expect((await keyed('a dog', 'img-2')).status).toBe(202);
    expect(await keyed('a dog', 'bad key')).toMatchObject({ status: 400, body: { code: 'invalid_idempotency_key' } });
    expect(caller.account.balance).toBe(1000 - 2 - 2);
  });

  it('limits: a 4th job at once is 429 concurrency_limit with Retry-After; the 31st in 10 minutes is 429 rate_limited', async () => {
    const { clock, client, caller } = await open();
    for (let i = 0; i < 3; i++) await created(client.post('/images', { description: `job ${i} simulate:fail:busy` }));
    const fourth = await client.post('/images', { description: 'one more' });
    expect(fourth).toMatchObject({ status: 429, body: { code: 'concurrency_limit', retry_after: 2 }, headers: { 'retry-after': '2' } });
    expect(caller.account.balance).toBe(1000 - 6);
    for (let round = 0; round < 9; round++) {
      await clock.advance(3_000);
      for (let i = 0; i < 3; i++) await created(client.post('/images', { description: `round ${round} simulate:fail:busy` }));
    }
    await clock.advance(3_000);
    expect(await client.post('/images', { description: 'the 31st' })).toMatchObject({ status: 429, body: { code: 'rate_limited' } });
    expect(caller.account.balance).toBe(1000);
  });
});

describe('GET /images/{id}, GET /images, DELETE /images/{id} (spec 4.9-4.11)', () => {
  it('waits up to `wait` seconds on the simulated clock, returning as soon as the job ends; refuses a bad wait; 404 for others', async () => {
    const { service, clock, client } = await open();
    const job = await created(client.post('/images', { description: 'a kite simulate:fail:busy' }));
    const short = await waiting(clock, () => client.get(`/images/${job.id}?wait=1`));
    await clock.advance(1_000);
    expect((await short.answer).body).toMatchObject({ status: 'generating', estimated_time_seconds: 1 });
    const long = await waiting(clock, () => client.get(`/images/${job.id}?wait=30`));
    await clock.advance(1_000);
    expect((await long.answer).body).toMatchObject({ status: 'failed', error_code: 'busy' });
    expect(clock.now()).toBe(T0 + 2_000);
    for (const wait of ['31', '-1', 'x', '1.5']) expect(await client.get(`/images/${job.id}?wait=${wait}`)).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    const other = service.accounts.create({ balance: 100 });
    const stranger = { key: other.key.token };
    for (const id of [String(job.id), '0', 'abc', '99']) expect(await client.get(`/images/${id}`, stranger)).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await client.delete(`/images/${job.id}`, stranger)).toMatchObject({ status: 404 });
  });

  it('lists newest first, paging with before and next_before, and refuses bad values', async () => {
    const { clock, client } = await open();
    for (let i = 1; i <= 5; i++) {
      await created(client.post('/images', { description: `job ${i} simulate:fail:busy` }));
      if (i === 3) await clock.advance(3_000);
    }
    const list = async (query = '') => (await client.get(`/images${query}`)).body as { data: Array<{ id: number }>; next_before: number | null };
    const ids = (page: { data: Array<{ id: number }> }) => page.data.map((job) => job.id);
    const first = await list('?limit=2');
    expect([ids(first), first.next_before]).toEqual([[5, 4], 4]);
    const second = await list('?limit=2&before=4');
    expect([ids(second), second.next_before]).toEqual([[3, 2], 2]);
    const last = await list('?limit=2&before=2');
    expect([ids(last), last.next_before]).toEqual([[1], null]);
    expect(await list()).toMatchObject({ next_before: null });
    expect(ids(await list())).toEqual([5, 4, 3, 2, 1]);
    for (const query of ['limit=0', 'limit=51', 'limit=x', 'before=0', 'before=abc']) {
      expect(await client.get(`/images?${query}`)).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    }
  });

  it('deletes the images: images_deleted, files gone, links answer null, no refund', async () => {
    const { service, clock, client, caller } = await open();
    const job = await created(client.post('/images', { template: 'poster', fields: { headline: 'Grand opening' }, count: 4 }));
    const done = await finish(client, clock, job.id);
    expect(done.images.map((image: { format: string }) => image.format)).toEqual(['png', 'png', 'png', 'png']);
    const files = done.images.flatMap((image: { url: string; thumbnail_url: string }) => [service.images.file(fileName(image.url))!.path, service.images.file(fileName(image.thumbnail_url))!.path]);
    expect(files.every((path: string) => existsSync(path))).toBe(true);
    const deleted = await client.delete(`/images/${job.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: job.id, deleted: true, images_deleted: 4 });
    expect(files.some((path: string) => existsSync(path))).toBe(false);
    expect(service.images.file(fileName(done.images[0].url))).toBeNull();
    expect((await client.get(`/images/${job.id}`)).body).toMatchObject({ status: 'done', images: [], credits_charged: 7 });
    expect(caller.account.balance).toBe(993);
  });

  it('a job deleted while generating loses its images as soon as it ends, with or without a second hook attached', async () => {
    for (const register of [true, false]) {
      const { service, clock, client, caller } = await open({ register });
      const job = await created(client.post('/images', { description: 'a boat' }));
      expect(await client.delete(`/images/${job.id}`)).toMatchObject({ status: 200, body: { images_deleted: 0 } });
      await finish(client, clock, job.id);
      expect((await client.get(`/images/${job.id}`)).body).toMatchObject({ status: 'done', images: [] });
      expect(service.state.images.get(caller.account.id, job.id)!.images).toEqual([]);
    }
    expect(hookErrors).toEqual([]);
  });
});

describe('AI characters (spec 2.7)', () => {
  it('makes each photo a trusted asset usable as a clip reference for 30 days; deleting the images removes them', async () => {
    const { service, clock, client, caller } = await open();
    const job = await created(client.post('/images', { type: 'character', character: { age: '26-35', style: 'photo' } }));
    expect(job).toMatchObject({ type: 'character', count: 4, credits_reserved: 5 });
    const done = await finish(client, clock, job.id);
    const endAt = T0 + 3_000;
    expect(done.images.map((image: { animate: string; trusted_until: string }) => [image.animate, image.trusted_until])).toEqual(Array(4).fill(['trusted', new Date(endAt + 30 * DAY).toISOString()]));
    const lookup = attachImageFiles(service);
    const assets = done.images.map((image: { url: string }) => lookup.character(caller.account.id, image.url));
    expect(assets.every(Boolean)).toBe(true);
    for (const asset of assets) {
      expect((await client.get(`/assets/${asset!.id}`)).body).toMatchObject({ status: 'trusted', trust_level: 'generated', subject_consent: 'no_real_person', asset_uri: `asset://${asset!.id}` });
      expect(existsSync(service.files.asset(asset!.sha256, 'jpg'))).toBe(true);
    }
    expect((await client.get('/assets')).body.total).toBe(4);
    // Usable in an edit until trusted_until, then no longer.
    expect((await client.post('/images', { description: 'her in a café', asset_ids: [assets[0]!.id], subject_consent: 'no_real_person' })).status).toBe(202);
    await clock.advance(30 * DAY);
    expect(await client.post('/images', { description: 'her again', asset_ids: [assets[0]!.id], subject_consent: 'no_real_person' })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    expect((await client.get('/assets')).body.total).toBe(0);
    expect(await client.delete(`/images/${job.id}`)).toMatchObject({ body: { images_deleted: 4 } });
    for (const asset of assets) {
      expect((await client.get(`/assets/${asset!.id}`)).status).toBe(404);
      expect(existsSync(service.files.asset(asset!.sha256, 'jpg'))).toBe(false);
    }
  });

  it('a character job\'s photos are adopted once, and attaching the hook again adopts nothing twice', async () => {
    const { service, clock, client, caller } = await open();
    const job = await created(client.post('/images', { type: 'character', character: { age: '51+', style: 'cinematic' } }));
    const done = await finish(client, clock, job.id);
    const before = service.state.images.listenerCount('ended');
    const again = attachImageFiles(service);
    expect(service.state.images.listenerCount('ended')).toBe(before + 1);
    expect(done.images.every((image: { url: string }) => again.character(caller.account.id, image.url))).toBe(true);
    expect((await client.get('/assets')).body.total).toBe(4);
    expect(service.store.table('asset').size).toBe(4);
    again.stop();
    expect(service.state.images.listenerCount('ended')).toBe(before);
    expect(hookErrors).toEqual([]);
  });
});
