import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, type StartedService } from '../../../src/service/http/app.js';
import { PAGE_CSP } from '../../../src/service/pages/page.js';
import { call, connect, start, untilWaiting } from './fixtures.js';

const png = (color = '#3366cc') => sharp({ create: { width: 16, height: 16, channels: 3, background: color } }).png().toBuffer();

/** Posts the page's form as its script does: multipart, same origin, JSON answer. */
async function post(url: string, { file, consent, origin, accept = 'application/json', headers = {} }: { file?: Buffer; consent?: string; origin?: string | null; accept?: string; headers?: Record<string, string> }) {
  const form = new FormData();
  if (file) form.append('file', new Blob([new Uint8Array(file)], { type: 'image/png' }), 'me.png');
  if (consent !== undefined) form.append('subject_consent', consent);
  const res = await fetch(url, { method: 'POST', body: form, headers: { accept, ...(origin === null ? {} : { origin: origin ?? new URL(url).origin }), ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : null };
}

async function startUpload(started: StartedService) {
  const client = await connect(started);
  const link = await call(client, 'start_photo_upload');
  expect(link.isError).toBe(false);
  return { client, ...(link.data as { upload_id: string; upload_url: string; expires_at: string; instructions: string }) };
}

const assetCount = (started: StartedService) => started.service.store.table('asset').size;

describe('the photo tools and the upload page', () => {
  it('start → upload on the page → get_photo pending, then ready with the consent → usable in create_clip', async () => {
    // A fixed draw puts moderation at about 30 s, inside get_photo's 45 s wait (it may take up to 60 s).
    const started = await start({ speed: 'realistic', random: () => 0.45 });
    const { client, upload_id: uploadId, upload_url: url, expires_at: expiresAt, instructions } = await startUpload(started);
    expect(url).toMatch(new RegExp(`^${started.origin}/photos/upload/[A-Za-z0-9_-]{43}$`));
    expect(uploadId).toMatch(/^upl_/);
    expect(url).not.toContain(uploadId);
    expect(Date.parse(expiresAt) - started.clock.now()).toBe(3_600_000);
    expect(instructions).toMatch(/get_photo/);
    const tools = await client.listTools();
    expect(tools.tools.find((tool) => tool.name === 'start_photo_upload')?.description).toMatch(/Give the upload_url to the person.*then call get_photo/);

    const page = await fetch(url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(Object.fromEntries(page.headers)).toMatchObject({ 'content-security-policy': PAGE_CSP, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' });
    const markup = await page.text();
    expect(markup).toContain('name="subject_consent" value="self"');
    expect(markup).not.toMatch(/\schecked[\s>=]/);
    expect(markup).not.toContain(url.split('/').pop());

    const waiting = await call(client, 'get_photo', { photo_id: uploadId, wait_seconds: 0 });
    expect(waiting.data).toMatchObject({ status: 'waiting_for_upload', uploaded: false, asset_id: null });

    const sent = await post(url, { file: await png(), consent: 'self' });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ upload_id: uploadId, status: 'received', moderation: 'pending', subject_consent: 'self' });
    expect(sent.headers.get('cache-control')).toBe('no-store');
    const assetId = sent.body!.asset_id as number;
    expect(started.service.state.assets.get(1, assetId)).toMatchObject({ status: 'pending', subjectConsent: 'self', mimeType: 'image/png' });

    const pending = await call(client, 'get_photo', { photo_id: uploadId, wait_seconds: 0 });
    expect(pending.data).toMatchObject({ status: 'pending', uploaded: true, asset_id: assetId, asset_uri: null, subject_consent: 'self' });
    // Not usable yet, so not listed: list_photos shows moderated photos only.
    expect((await call(client, 'list_photos', {})).data).toMatchObject({ total: 0, data: [] });
    // Moderation takes 5-60 s on the simulated clock: get_photo waits for it, woken by its end.
    const timers = started.clock.timers;
    const waited = call(client, 'get_photo', { photo_id: uploadId });
    await untilWaiting(started, timers);
    await started.clock.advance(61_000);
    expect((await waited).data).toMatchObject({ status: 'ready', asset_id: assetId, asset_uri: `asset://${assetId}`, subject_consent: 'self' });
    expect((await call(client, 'get_photo', { photo_id: assetId, wait_seconds: 0 })).data).toMatchObject({ status: 'ready', upload_id: uploadId });

    const listed = await call(client, 'list_photos', {});
    expect(listed.data).toMatchObject({ total: 1, data: [{ asset_id: assetId, asset_uri: `asset://${assetId}`, subject_consent: 'self' }] });

    const clip = await call(client, 'create_clip', { prompt: 'waving', photo_ids: [assetId], max_credits: 10 });
    expect(clip.isError).toBe(false);
    expect(clip.data).toMatchObject({ image_urls: [`asset://${assetId}`], subject_consent: 'self' });
    const videos = (await (await fetch(`${started.url}/videos`, { headers: { authorization: `Bearer ${started.apiKey}` } })).json()) as { data: Array<{ id: number }> };
    expect(videos.data.map((video) => video.id)).toEqual([clip.data.id]);
    expect(await call(client, 'create_clip', { photo_ids: [999], max_credits: 10 })).toMatchObject({ isError: true, error: { error: 'invalid_photo_id' } });
  });

  it('a link is single use: a second photo, and the page, answer 410 link_used once one was accepted', async () => {
    const started = await start();
    const { client, upload_url: url, upload_id: uploadId } = await startUpload(started);
    expect((await post(url, { file: await png(), consent: 'no_real_person' })).status).toBe(200);
    const again = await post(url, { file: await png('#ff0000'), consent: 'self' });
    expect(again.status).toBe(410);
    expect(again.headers.get('content-type')).toBe('application/problem+json');
    expect(again.body).toMatchObject({ code: 'link_used' });
    const page = await fetch(url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(410);
    expect(await page.text()).toMatch(/already uploaded/);
    expect(assetCount(started)).toBe(1);
    expect((await call(client, 'get_photo', { photo_id: uploadId, wait_seconds: 0 })).data).toMatchObject({ subject_consent: 'no_real_person' });
  });

  it('an expired link (one hour on the simulated clock) and an unknown one are refused', async () => {
    const started = await start();
    const { client, upload_url: url, upload_id: uploadId } = await startUpload(started);
    await started.clock.advance(3_600_000);
    expect((await fetch(url)).status).toBe(410);
    const sent = await post(url, { file: await png(), consent: 'self' });
    expect(sent).toMatchObject({ status: 410, body: { code: 'link_expired' } });
    expect(assetCount(started)).toBe(0);
    expect((await call(client, 'get_photo', { photo_id: uploadId, wait_seconds: 0 })).data).toMatchObject({ status: 'expired', uploaded: false });
    const unknown = await fetch(`${started.origin}/photos/upload/${'A'.repeat(43)}`, { headers: { accept: 'text/html' } });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect((await fetch(`${started.origin}/photos/upload/nope`)).status).toBe(404);
    expect(await call(client, 'get_photo', { photo_id: 'upl_nope' })).toMatchObject({ isError: true, error: { error: 'not_found' } });
  });

  it('a photo without consent, a bad file or an oversized one is refused with nothing stored, and the link still works', async () => {
    const started = await start();
    const { upload_url: url } = await startUpload(started);
    const noConsent = await post(url, { file: await png() });
    expect(noConsent).toMatchObject({ status: 422, body: { code: 'consent_required', detail: 'Choose who is in the photo.' } });
    const badConsent = await post(url, { file: await png(), consent: 'everyone' });
    expect(badConsent).toMatchObject({ status: 400, body: { code: 'invalid_subject_consent' } });
    const notImage = new FormData();
    notImage.append('file', new Blob(['hello, not a photo']), 'x.png');
    notImage.append('subject_consent', 'self');
    const bad = await fetch(url, { method: 'POST', body: notImage, headers: { origin: started.origin, accept: 'application/json' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'bad_mime' });
    // Refused by its declared length, before a byte of the body is read.
    const big = Buffer.alloc(20 * 1024 * 1024 + 1);
    (await png()).copy(big);
    const oversized = await post(url, { file: big, consent: 'self' });
    expect(oversized).toMatchObject({ status: 413, body: { code: 'too_large' } });
    // Without the script the browser posts the form and reads a page: the form again, with the error.
    const html = await post(url, { file: await png(), accept: 'text/html' });
    expect(html.status).toBe(422);
    expect(html.text).toContain('Choose who is in the photo.');
    expect(html.text).toContain('id="photo-upload"');
    expect(assetCount(started)).toBe(0);
    expect((await fetch(url)).status).toBe(200);
    expect((await post(url, { file: await png(), consent: 'permission' })).status).toBe(200);
  });

  it('a POST from another origin, or with neither Origin nor Sec-Fetch-Site, is refused (403)', async () => {
    const started = await start();
    const { upload_url: url } = await startUpload(started);
    const cross = await post(url, { file: await png(), consent: 'self', origin: 'http://evil.example' });
    expect(cross).toMatchObject({ status: 403, body: { code: 'origin_not_allowed' } });
    expect((await post(url, { file: await png(), consent: 'self', origin: null, headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    expect((await post(url, { file: await png(), consent: 'self', origin: null })).status).toBe(403);
    expect(assetCount(started)).toBe(0);
    expect((await post(url, { file: await png(), consent: 'self', origin: null, headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(200);
  });

  it('a link survives a restart of the service', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-photos-'));
    try {
      const file = join(dir, 'service.json');
      const clock = new SimulatedClock({ frozen: true });
      const first = await createServiceApp({ file, clock, warn: () => undefined });
      const { token, upload } = first.service.photoUploads.create({ accountId: 1, keyId: first.service.accounts.first()!.key.id });
      await first.service.store.commit();
      await first.close();
      const second = await createServiceApp({ file, clock: new SimulatedClock({ frozen: true, start: clock.now() }), warn: () => undefined });
      try {
        expect(second.service.photoUploads.get(1, upload.id)).toMatchObject({ tokenHash: upload.tokenHash, usedAt: null });
        expect((await request(second).get(`/photos/upload/${token}`)).status).toBe(200);
        expect(JSON.stringify(second.service.store.table('photo_upload').get(upload.id))).not.toContain(token);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
