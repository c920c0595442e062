import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { AssetFormFields, assetForm } from '../../../../src/service/contract/assets.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service } from '../../../../src/service/service.js';
import { callerOf, serviceClient, type ServiceClient } from '../../../helpers/service-client.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const services: Service[] = [];
const clients: ServiceClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const service of services.splice(0)) await service.close();
});

const fakeEmitter = () => ({ send: async () => undefined, stop: async () => undefined }) as unknown as WebhookEmitter;

/**
 * A service in memory on a frozen clock served through the real app, its first caller, a second account,
 * and an uploader per key that posts a form to POST /v1/assets.
 */
async function open() {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const service = await Service.open({ file: false, clock, emitter: fakeEmitter(), random: () => 0.5 });
  services.push(service);
  const client = await serviceClient(service);
  clients.push(client);
  const other = service.accounts.create({ balance: 100 });
  const stranger = { key: other.key.token };
  return { service, clock, client, caller: callerOf(service), stranger, upload: uploader(client, service.first().apiKey), strangerUpload: uploader(client, other.key.token) };
}

/** Posts a multipart form to POST /v1/assets with the key `key`, as a client does. */
function uploader(client: ServiceClient, key: string) {
  return async (file: Buffer | null, fields: Record<string, string> = {}, filename = 'photo.png') => {
    const form = new FormData();
    if (file) form.append('file', new Blob([new Uint8Array(file)]), filename);
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    const res = await fetch(`${client.origin}/v1/assets`, { method: 'POST', body: form, headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
}

/** A real, decodable PNG of one colour: each colour is other bytes. */
const png = (colour: string) => sharp({ create: { width: 8, height: 8, channels: 3, background: colour } }).png().toBuffer();
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const uploadsLeft = (service: Service) => (existsSync(service.files.uploads) ? readdirSync(service.files.uploads) : []);
const assetsKept = (service: Service) => (existsSync(join(service.files.dir, 'assets')) ? readdirSync(join(service.files.dir, 'assets')) : []);

describe('POST /assets (spec 4.12, 3.2)', () => {
  it('answers 200 pending with the upload response, keeps the file by sha256, and moderation makes it trusted on the clock', async () => {
    const { service, clock, client, caller, upload } = await open();
    const bytes = await png('#ff0000');
    const res = await upload(bytes, { subject_consent: 'self' }, 'me.png');
    expect(res).toMatchObject({
      status: 200,
      body: { id: 1, status: 'pending', asset_uri: null, name: 'me.png', file_size: bytes.length, mime_type: 'image/png', trust_level: 'unverified', subject_consent: 'self', deduped: false, created_at: '2026-01-01T00:00:00.000Z' },
    });
    expect(res.body.public_url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/files\/assets\/[A-Za-z0-9_-]{22}\.png$/);
    expect(existsSync(service.files.asset(sha(bytes), 'png'))).toBe(true);
    expect(uploadsLeft(service)).toEqual([]);
    expect(caller.account.balance).toBe(1000);
    await clock.advance(2_000);
    expect((await client.get('/assets/1')).body).toMatchObject({ id: 1, status: 'trusted', asset_uri: 'asset://1', trust_level: 'moderated', reason_code: null });
  });

  it('dedupes the same bytes to the same asset (deduped true), and takes the alias third_party_with_permission as permission', async () => {
    const { service, upload } = await open();
    const bytes = await png('#00ff00');
    const first = await upload(bytes, { subject_consent: 'third_party_with_permission' });
    const again = await upload(bytes, { sha256: sha(bytes) });
    expect(first.body).toMatchObject({ subject_consent: 'permission', deduped: false });
    expect(again.body).toMatchObject({ id: first.body.id, deduped: true, public_url: first.body.public_url });
    expect(service.store.table('asset').size).toBe(1);
    expect(uploadsLeft(service)).toEqual([]);
  });

  it('refuses a bad subject_consent (400 invalid_subject_consent), keeping nothing', async () => {
    const { service, upload } = await open();
    expect(await upload(await png('#0000ff'), { subject_consent: 'my_friend' })).toMatchObject({ status: 400, body: { code: 'invalid_subject_consent', allowed_values: ['self', 'permission', 'no_real_person'] } });
    expect(service.store.table('asset').size).toBe(0);
    expect(uploadsLeft(service)).toEqual([]);
    // A blank field (an unanswered form input) is no declaration, not a bad one.
    expect(assetForm(AssetFormFields.parse({ subject_consent: '' })).subjectConsent).toBeNull();
    expect(assetForm(AssetFormFields.parse({ subject_consent: '  ' })).subjectConsent).toBeNull();
    expect(await upload(await png('#0000fe'), { subject_consent: '' })).toMatchObject({ status: 200, body: { subject_consent: null } });
  });

  it('checks sha256: 64 lowercase hex, equal to the bytes (400 invalid_parameter), else keeps nothing', async () => {
    const { service, upload } = await open();
    const bytes = await png('#123456');
    expect(await upload(bytes, { sha256: sha(bytes).toUpperCase() })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'sha256' } });
    expect(await upload(bytes, { sha256: 'a'.repeat(64) })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', detail: expect.stringContaining('does not match the file') } });
    expect(service.store.table('asset').size).toBe(0);
    expect(assetsKept(service)).toEqual([]);
    expect(uploadsLeft(service)).toEqual([]);
    expect((await upload(bytes, { sha256: sha(bytes) })).status).toBe(200);
  });

  it('answers no_file, bad_mime and too_large as problems, leaving no temporary file', async () => {
    const { service, upload } = await open();
    expect(await upload(null, { subject_consent: 'self' })).toMatchObject({ status: 400, body: { code: 'no_file' } });
    expect(await upload(Buffer.from('just text, not a photo'), {}, 'a.jpg')).toMatchObject({ status: 400, body: { code: 'bad_mime' } });
    const big = Buffer.concat([await png('#abcdef'), Buffer.alloc(20 * 1024 * 1024)]);
    expect(await upload(big)).toMatchObject({ status: 413, body: { code: 'too_large' } });
    expect(service.store.table('asset').size).toBe(0);
    expect(uploadsLeft(service)).toEqual([]);
  });

  it('simulate rejected: accepted pending, then moderation ends rejected with its reason; the same bytes again are 422', async () => {
    const { service, clock, client, upload } = await open();
    const bytes = await png('#333333');
    expect(await upload(bytes, { simulate: 'rejected:violence' })).toMatchObject({ status: 200, body: { status: 'pending' } });
    await clock.advance(2_000);
    expect((await client.get('/assets/1')).body).toMatchObject({ status: 'rejected', asset_uri: null, trust_level: 'rejected', reason_code: 'violence' });
    expect(await upload(bytes)).toMatchObject({ status: 422, body: { code: 'moderation_rejected', reason_code: 'violence' } });
    expect((await client.get('/assets')).body.total).toBe(0);
    expect(service.assets.file((await client.get('/assets/1')).body.public_url.split('/').pop())).toBeNull();
  });

  it('simulate moderation_rejected: 422 with reason_code, nothing stored', async () => {
    const { service, upload } = await open();
    expect(await upload(await png('#444444'), { simulate: 'moderation_rejected:minor_detected' })).toMatchObject({ status: 422, body: { code: 'moderation_rejected', reason_code: 'minor_detected', user_action: { kind: 'upload_photo' } } });
    expect(service.store.table('asset').size).toBe(0);
    expect(assetsKept(service)).toEqual([]);
    expect(uploadsLeft(service)).toEqual([]);
  });
});

describe('GET /assets/{id}, GET /assets, DELETE /assets/{id} (spec 4.13-4.15)', () => {
  it("answers 404 for another account's asset and for ids that are no ids", async () => {
    const { client, stranger, strangerUpload } = await open();
    const theirs = await strangerUpload(await png('#555555'));
    for (const id of [String(theirs.body.id), '0', 'abc', '99']) {
      expect(await client.get(`/assets/${id}`)).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect(await client.delete(`/assets/${id}`)).toMatchObject({ status: 404 });
    }
    expect((await client.get(`/assets/${theirs.body.id}`, stranger)).status).toBe(200);
  });

  it('lists trusted assets only, newest first, with limit and offset, and refuses bad values', async () => {
    const { clock, client, upload, strangerUpload } = await open();
    const list = async (query = '') => (await client.get(`/assets${query}`)).body;
    for (const colour of ['#010101', '#020202', '#030303']) await upload(await png(colour));
    await strangerUpload(await png('#040404'));
    await upload(await png('#050505'), { simulate: 'rejected' });
    expect((await list()).total).toBe(0);
    await clock.advance(2_000);
    await upload(await png('#060606'));
    expect(await list()).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect((await list()).data.map((asset: { id: number }) => asset.id)).toEqual([3, 2, 1]);
    expect(await list('?limit=1&offset=1')).toMatchObject({ data: [{ id: 2, status: 'trusted' }], total: 3, limit: 1, offset: 1 });
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'offset=-1', 'offset=1.5']) {
      expect(await client.get(`/assets?${query}`)).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    }
  });

  it('deletes: 200 success, the file goes once no asset of any account uses the bytes, and its public_url stops working', async () => {
    const { service, client, stranger, upload, strangerUpload } = await open();
    const bytes = await png('#777777');
    const mine = await upload(bytes);
    const theirs = await strangerUpload(bytes);
    expect(theirs.body).toMatchObject({ deduped: false });
    const name = mine.body.public_url.split('/').pop() as string;
    expect(service.assets.file(name)).toEqual({ path: service.files.asset(sha(bytes), 'png'), mime: 'image/png' });
    expect(service.assets.file(name.replace('.png', '.jpg'))).toBeNull();
    const deleted = await client.delete(`/assets/${mine.body.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, id: mine.body.id });
    expect((await client.get(`/assets/${mine.body.id}`)).status).toBe(404);
    expect(service.assets.file(name)).toBeNull();
    expect(existsSync(service.files.asset(sha(bytes), 'png'))).toBe(true);
    expect((await client.delete(`/assets/${theirs.body.id}`, stranger)).status).toBe(200);
    expect(existsSync(service.files.asset(sha(bytes), 'png'))).toBe(false);
  });
});
