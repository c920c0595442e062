// Issue 20 item 2: an image job whose processing fails ends `failed` (error_code failed, nothing charged,
// the reservation released), at once and after a restart, so it never holds a concurrency slot forever.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service } from '../../../../src/service/service.js';
import { callerOf, serviceClient, type ServiceClient } from '../../../helpers/service-client.js';
import { waiting } from '../../../helpers/waiting.js';
import { PNG_GARBAGE, pngClaiming } from '../assets/broken-images.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const opened: Array<{ service: Service; client: ServiceClient }> = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const { service, client } of opened.splice(0)) await closeBoth({ service, client });
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const fakeEmitter = () => ({ send: async () => undefined, stop: async () => undefined }) as unknown as WebhookEmitter;

async function closeBoth({ service, client }: { service: Service; client: ServiceClient }) {
  await client.close();
  await service.close();
}

// A service on a frozen clock, served through the real app (contract, pipeline, answers).
async function open(file: string | false = false, start = T0) {
  const warnings: string[] = [];
  const clock = new SimulatedClock({ frozen: true, start });
  const service = await Service.open({ file, clock, emitter: fakeEmitter(), random: () => 0.5, warn: (line) => void warnings.push(line) });
  const client = await serviceClient(service);
  opened.push({ service, client });
  return { service, clock, client, caller: callerOf(service), warnings };
}

/**
 * A trusted asset whose stored file holds `bytes`: what an upload kept before uploads were decoded (or a
 * file damaged on disk since). It is made from a good photo, then its file is replaced.
 */
async function brokenAsset(service: Service, clock: SimulatedClock, accountId: number, bytes: Buffer) {
  const good = await sharp({ create: { width: 32, height: 32, channels: 3, background: `#${bytes.length.toString(16).padStart(6, '0').slice(-6)}` } }).png().toBuffer();
  const sha256 = createHash('sha256').update(good).digest('hex');
  const path = service.files.asset(sha256, 'png');
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, good);
  const { asset } = service.state.assets.add({ accountId, sha256, name: 'photo.png', fileSize: good.length, mimeType: 'image/png', ext: 'png', subjectConsent: 'self' });
  await clock.advance(61_000);
  expect(service.state.assets.usable(asset)).toBe(true);
  writeFileSync(path, bytes);
  return asset;
}

describe('image jobs whose photos cannot be processed (issue 20 item 2)', () => {
  it('each ends failed with nothing charged and its reservation released, so three of them never block a fourth job', async () => {
    const { service, clock, client, caller, warnings } = await open();
    const photos = [pngClaiming(100_000, 100_000), pngClaiming(20_000, 20_000), PNG_GARBAGE];
    const ids: number[] = [];
    const assets = [];
    for (const bytes of photos) assets.push(await brokenAsset(service, clock, caller.account.id, bytes));
    for (const asset of assets) {
      const created = await client.post('/images', { description: 'make it brighter', asset_ids: [asset.id], subject_consent: 'self' });
      expect(created.status).toBe(202);
      ids.push(created.body.id);
    }
    expect(caller.account.balance).toBe(1000 - 3 * 2);
    const ended = [];
    for (const id of ids) ended.push(await waiting(clock, () => client.get(`/images/${id}?wait=30`)));
    await clock.advance(5_000);
    for (const { answer } of ended) {
      expect((await answer).body).toMatchObject({ status: 'failed', error_code: 'failed', credits_reserved: 2, credits_charged: 0, credits_refunded: 2, images: [] });
    }
    expect(caller.account.balance).toBe(1000);
    expect(service.state.images.limit(caller.account.id)).toBeNull();
    expect((await client.post('/images', { description: 'a lighthouse' })).status).toBe(202);
    // The cause is still reported to the operator.
    expect(warnings.some((line) => /image job \d+ failed/.test(line))).toBe(true);
  });

  it('a job found generating after a restart, whose photo cannot be processed, ends failed too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-broken-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const first = await open(file);
    const asset = await brokenAsset(first.service, first.clock, first.caller.account.id, pngClaiming(100_000, 100_000));
    const created = (await first.client.post('/images', { description: 'make it brighter', asset_ids: [asset.id], subject_consent: 'self', count: 4 })).body;
    expect(created).toMatchObject({ status: 'generating', credits_reserved: 7 });
    await closeBoth(opened.splice(0)[0]!);

    // Restarted a day later: the job's end is long past and fires at once.
    const second = await open(file, T0 + 86_400_000);
    const job = (await second.client.get(`/images/${created.id}?wait=30`)).body;
    expect(job).toMatchObject({ status: 'failed', error_code: 'failed', credits_charged: 0, credits_refunded: 7 });
    expect(second.caller.account.balance).toBe(1000);
    await closeBoth(opened.splice(0)[0]!);
    const third = await open(file, T0 + 2 * 86_400_000);
    expect((await third.client.get(`/images/${created.id}`)).body).toMatchObject({ status: 'failed', error_code: 'failed' });
  });
});
