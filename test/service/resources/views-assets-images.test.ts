import { describe, expect, it } from 'vitest';
import type { Asset } from '../../../src/service/resources/assets/assets.js';
import { assetView, uploadView } from '../../../src/service/resources/assets/views.js';
import type { ImageJob } from '../../../src/service/resources/images/job.js';
import { ImageRequest } from '../../../src/service/contract/images.js';
import { parseOrThrow } from '../../../src/service/contract/problems.js';
import { imageJobView } from '../../../src/service/resources/images/views.js';

const ORIGIN = 'http://127.0.0.1:8080';
const asset = (overrides: Partial<Asset> = {}): Asset => ({
  id: 3, accountId: 1, sha256: 'a'.repeat(64), name: 'me.jpg', fileSize: 1234, mimeType: 'image/jpeg', ext: 'jpg', status: 'pending',
  subjectConsent: 'self', token: 'tok', createdAt: 0, moderation: { at: 5_000, outcome: 'trusted' }, reasonCode: null, trustedUntil: null, ...overrides,
});

describe('asset views (spec 2.6)', () => {
  it('upload response: every field, asset_uri only once trusted', () => {
    const pending = uploadView(asset(), false, ORIGIN);
    expect(Object.keys(pending)).toEqual(['id', 'status', 'asset_uri', 'public_url', 'name', 'file_size', 'mime_type', 'trust_level', 'subject_consent', 'deduped', 'created_at']);
    expect(pending).toMatchObject({ asset_uri: null, trust_level: 'unverified', public_url: `${ORIGIN}/files/assets/tok.jpg`, deduped: false });
    expect(uploadView(asset({ status: 'trusted' }), true, ORIGIN)).toMatchObject({ asset_uri: 'asset://3', trust_level: 'moderated', deduped: true });
  });

  it('GET asset: id, name, status, public_url, asset_uri, and reason_code once rejected', () => {
    expect(assetView(asset({ status: 'rejected', reasonCode: 'violence' }), ORIGIN)).toMatchObject({ id: 3, name: 'me.jpg', status: 'rejected', asset_uri: null, reason_code: 'violence', trust_level: 'rejected' });
  });
});

describe('image job view (spec 2.7)', () => {
  it('shows credits_charged null while running, credits_refunded and error_code once ended', () => {
    const command = parseOrThrow(ImageRequest, { description: 'x', count: 4 });
    const job: ImageJob = {
      id: 9, accountId: 1, keyId: 'k', status: 'generating', command, creditsReserved: 7, creditsCharged: null, creditsRefunded: 0,
      images: [], imagesDeleted: false, errorCode: null, createdAt: 0, completedAt: null, plan: { endAt: 1, make: 4, failWith: null },
    };
    const running = imageJobView(job, ORIGIN, 45);
    expect(running).toMatchObject({ object: 'image_job', status: 'generating', credits_charged: null, images: [], estimated_time_seconds: 45, poll_url: `${ORIGIN}/v1/images/9` });
    expect('credits_refunded' in running).toBe(false);
    const failed = imageJobView({ ...job, status: 'failed', creditsCharged: 0, creditsRefunded: 7, errorCode: 'busy', completedAt: 1 }, ORIGIN, 0);
    expect(failed).toMatchObject({ credits_charged: 0, credits_refunded: 7, error_code: 'busy' });
    const done = imageJobView({
      ...job, status: 'done', creditsCharged: 7, completedAt: 1,
      images: [{ id: 1, token: 't', thumbToken: 'th', width: 1552, height: 1552, format: 'png', animate: 'ok', trustedUntil: null, assetId: null }],
    }, ORIGIN, 0);
    expect(done.images[0]).toEqual({ id: 1, url: `${ORIGIN}/files/images/t.png`, thumbnail_url: `${ORIGIN}/files/images/th.webp`, width: 1552, height: 1552, format: 'png', animate: 'ok', trusted_until: null });
    expect('error_code' in done).toBe(false);
  });
});
