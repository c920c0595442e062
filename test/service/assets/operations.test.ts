import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../src/emitter/index.js';
import { assetFile, deleteAsset, getAsset, listAssets, parseSubjectConsent, uploadAsset } from '../../../src/service/assets/operations.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import type { Result } from '../../../src/service/http/result.js';
import { Service, type Caller } from '../../../src/service/service.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const services: Service[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  for (const service of services.splice(0)) await service.close();
});

const fakeEmitter = () => ({ send: async () => undefined, stop: async () => undefined }) as unknown as WebhookEmitter;

/** A service in memory on a frozen clock, its first caller, a second account, and a real server per caller for uploads. */
async function open() {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const service = await Service.open({ file: false, clock, emitter: fakeEmitter(), random: () => 0.5 });
  services.push(service);
  const guard = await service.guard(`Bearer ${service.first().apiKey}`);
  if (!guard.ok) throw new Error('guard');
  const other = service.accounts.create({ balance: 100 });
  const stranger: Caller = { account: other.account, key: other.key, headers: {} };
  return { service, clock, caller: guard.caller, stranger, upload: await uploader(service, guard.caller), strangerUpload: await uploader(service, stranger) };
}

/** Posts a form to a node:http server whose handler is uploadAsset, as the /v1/assets route is. */
async function uploader(service: Service, caller: Caller) {
  const server = createServer((req, res) => {
    void uploadAsset(service, caller, req).then((result) => {
      res.writeHead(result.status, { 'content-type': 'application/json', ...result.headers });
      res.end(JSON.stringify(result.body));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/assets`;
  return async (file: Buffer | null, fields: Record<string, string> = {}, filename = 'photo.png') => {
    const form = new FormData();
    if (file) form.append('file', new Blob([new Uint8Array(file)]), filename);
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    const res = await fetch(url, { method: 'POST', body: form });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
}

/** A real, decodable PNG of one colour: each colour is other bytes. */
const png = (colour: string) => sharp({ create: { width: 8, height: 8, channels: 3, background: colour } }).png().toBuffer();
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const body = (result: Result) => result.body as Record<string, any>;
const uploadsLeft = (service: Service) => (existsSync(join(service.filesDir, 'uploads')) ? readdirSync(join(service.filesDir, 'uploads')) : []);

describe('POST /assets (spec 4.12, 3.2)', () => {
  it('answers 200 pending with the upload response, keeps the file by sha256, and moderation makes it trusted on the clock', async () => {
    const { service, clock, caller, upload } = await open();
    const bytes = await png('#ff0000');
    const res = await upload(bytes, { subject_consent: 'self' }, 'me.png');
    expect(res).toMatchObject({
      status: 200,
      body: { id: 1, status: 'pending', asset_uri: null, name: 'me.png', file_size: bytes.length, mime_type: 'image/png', trust_level: 'unverified', subject_consent: 'self', deduped: false, created_at: '2026-01-01T00:00:00.000Z' },
    });
    expect(res.body.public_url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/files\/assets\/[A-Za-z0-9_-]{22}\.png$/);
    expect(existsSync(service.assetPath(sha(bytes), 'png'))).toBe(true);
    expect(uploadsLeft(service)).toEqual([]);
    expect(caller.account.balance).toBe(1000);
    await clock.advance(2_000);
    expect(body(getAsset(service, caller, '1'))).toMatchObject({ id: 1, status: 'trusted', asset_uri: 'asset://1', trust_level: 'moderated', reason_code: null });
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
    expect(parseSubjectConsent('')).toBeNull();
  });

  it('checks sha256: 64 lowercase hex, equal to the bytes (400 invalid_parameter), else keeps nothing', async () => {
    const { service, upload } = await open();
    const bytes = await png('#123456');
    expect(await upload(bytes, { sha256: sha(bytes).toUpperCase() })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'sha256' } });
    expect(await upload(bytes, { sha256: 'a'.repeat(64) })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', detail: expect.stringContaining('does not match the file') } });
    expect(service.store.table('asset').size).toBe(0);
    expect(readdirSync(service.filesDir).includes('assets') ? readdirSync(join(service.filesDir, 'assets')) : []).toEqual([]);
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
    const { service, clock, caller, upload } = await open();
    const bytes = await png('#333333');
    expect(await upload(bytes, { simulate: 'rejected:violence' })).toMatchObject({ status: 200, body: { status: 'pending' } });
    await clock.advance(2_000);
    expect(body(getAsset(service, caller, '1'))).toMatchObject({ status: 'rejected', asset_uri: null, trust_level: 'rejected', reason_code: 'violence' });
    expect(await upload(bytes)).toMatchObject({ status: 422, body: { code: 'moderation_rejected', reason_code: 'violence' } });
    expect(body(listAssets(service, caller, {})).total).toBe(0);
    expect(assetFile(service, body(getAsset(service, caller, '1')).public_url.split('/').pop())).toBeNull();
  });

  it('simulate moderation_rejected: 422 with reason_code, nothing stored', async () => {
    const { service, upload } = await open();
    expect(await upload(await png('#444444'), { simulate: 'moderation_rejected:minor_detected' })).toMatchObject({ status: 422, body: { code: 'moderation_rejected', reason_code: 'minor_detected', user_action: { kind: 'upload_photo' } } });
    expect(service.store.table('asset').size).toBe(0);
    expect(existsSync(join(service.filesDir, 'assets')) ? readdirSync(join(service.filesDir, 'assets')) : []).toEqual([]);
    expect(uploadsLeft(service)).toEqual([]);
  });
});

describe('GET /assets/{id}, GET /assets, DELETE /assets/{id} (spec 4.13-4.15)', () => {
  it("answers 404 for another account's asset and for ids that are no ids", async () => {
    const { service, caller, stranger, strangerUpload } = await open();
    const theirs = await strangerUpload(await png('#555555'));
    for (const id of [String(theirs.body.id), '0', 'abc', '99']) {
      expect(getAsset(service, caller, id)).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect(await deleteAsset(service, caller, id)).toMatchObject({ status: 404 });
    }
    expect(getAsset(service, stranger, String(theirs.body.id)).status).toBe(200);
  });

  it('lists trusted assets only, newest first, with limit and offset, and refuses bad values', async () => {
    const { service, clock, caller, upload, strangerUpload } = await open();
    for (const colour of ['#010101', '#020202', '#030303']) await upload(await png(colour));
    await strangerUpload(await png('#040404'));
    await upload(await png('#050505'), { simulate: 'rejected' });
    expect(body(listAssets(service, caller, {})).total).toBe(0);
    await clock.advance(2_000);
    await upload(await png('#060606'));
    expect(body(listAssets(service, caller, {}))).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(body(listAssets(service, caller, {})).data.map((asset: { id: number }) => asset.id)).toEqual([3, 2, 1]);
    expect(body(listAssets(service, caller, { limit: '1', offset: '1' }))).toMatchObject({ data: [{ id: 2, status: 'trusted' }], total: 3, limit: 1, offset: 1 });
    for (const query of [{ limit: '0' }, { limit: '101' }, { limit: 'x' }, { offset: '-1' }, { offset: '1.5' }]) {
      expect(listAssets(service, caller, query)).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    }
  });

  it('deletes: 200 success, the file goes once no asset of any account uses the bytes, and its public_url stops working', async () => {
    const { service, caller, stranger, upload, strangerUpload } = await open();
    const bytes = await png('#777777');
    const mine = await upload(bytes);
    const theirs = await strangerUpload(bytes);
    expect(theirs.body).toMatchObject({ deduped: false });
    const name = mine.body.public_url.split('/').pop() as string;
    expect(assetFile(service, name)).toEqual({ path: service.assetPath(sha(bytes), 'png'), mime: 'image/png' });
    expect(assetFile(service, name.replace('.png', '.jpg'))).toBeNull();
    expect(await deleteAsset(service, caller, String(mine.body.id))).toEqual({ status: 200, body: { success: true, id: mine.body.id } });
    expect(getAsset(service, caller, String(mine.body.id)).status).toBe(404);
    expect(assetFile(service, name)).toBeNull();
    expect(existsSync(service.assetPath(sha(bytes), 'png'))).toBe(true);
    expect((await deleteAsset(service, stranger, String(theirs.body.id))).status).toBe(200);
    expect(existsSync(service.assetPath(sha(bytes), 'png'))).toBe(false);
  });
});
