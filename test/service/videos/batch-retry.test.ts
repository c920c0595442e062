import { describe, expect, it } from 'vitest';
import type { Video } from '../../../src/service/resources/videos/lifecycle.js';
import { validateBatch } from '../../../src/service/videos/batch.js';
import { retryOutcome, retryRefusal } from '../../../src/service/resources/videos/retry.js';

const options = { strict: false, defaultAssetIds: [] };

describe('validateBatch (spec 4.2)', () => {
  it('fills omitted fields from defaults and validates each item', () => {
    const result = validateBatch({ defaults: { model: 'cinema', duration: 10 }, items: [{ prompt: 'a' }, { prompt: 'b', duration: 20, model: null }] }, options);
    if (!result.ok) throw new Error(result.refusal.code);
    expect(result.value.map((c) => [c.prompt, c.model, c.duration])).toEqual([['a', 'cinema', 10], ['b', 'cinema', 20]]);
  });

  it('refuses the whole batch at the first bad item, with item_index', () => {
    const result = validateBatch({ items: [{ prompt: 'a' }, { prompt: 'b', duration: 99 }, { ratio: 'x' }] }, options);
    expect(result).toMatchObject({ ok: false, refusal: { code: 'invalid_duration', extra: { item_index: 1 } } });
    expect(validateBatch({ items: [{ prompt: 'a' }, 'x'] }, options)).toMatchObject({ ok: false, refusal: { code: 'invalid_json', extra: { item_index: 1 } } });
    expect(validateBatch({ items: [{ image_urls: ['https://example.com/a.jpg'] }] }, options)).toMatchObject({ ok: false, refusal: { code: 'consent_required', extra: { item_index: 0 } } });
  });

  it('takes 1-5 items: batch_too_large above, invalid_json for none or a body without items', () => {
    const item = { prompt: 'a' };
    expect(validateBatch({ items: Array(5).fill(item) }, options).ok).toBe(true);
    expect(validateBatch({ items: Array(6).fill(item) }, options)).toMatchObject({ ok: false, refusal: { code: 'batch_too_large' } });
    for (const body of [{ items: [] }, {}, { items: 'a' }, [], null, { items: [item], defaults: [1] }]) {
      expect(validateBatch(body, options)).toMatchObject({ ok: false, refusal: { code: 'invalid_json' } });
    }
  });
});

function failed(overrides: Partial<Video> = {}): Video {
  return {
    id: 5, accountId: 1, keyId: 'k', status: 'error', prompt: 'x', model: 'standard', duration: 5, ratio: '16:9', resolution: '480p',
    imageUrls: [], assetIdsUsed: null, assetSource: 'none', subjectConsent: null, callbackUrl: null, charged: 9, refunded: true, progress: null,
    errorCode: 'upstream_busy', createdAt: 0, startedAt: 0, completedAt: 0, retryOf: null, retriedBy: null, batchId: null, sticky: false,
    plan: { startAt: 0, endAt: 0, outcome: 'upstream_busy' }, ...overrides,
  };
}

describe('retryRefusal (spec 3.1 and 4.6), condition by condition', () => {
  it('allows a failed task with a retryable error_code, once', () => {
    for (const code of ['upstream_busy', 'upstream_unavailable', 'upstream_timeout', 'upstream_error'] as const) expect(retryRefusal(failed({ errorCode: code }), false)).toBeNull();
  });

  it('refuses each condition with its code', () => {
    for (const status of ['pending', 'generating', 'done', 'cancelled'] as const) expect(retryRefusal(failed({ status }), false)?.code).toBe('not_failed');
    for (const code of ['content_rejected', 'upstream_auth_failed', 'upstream_bad_request', 'image_fetch_failed', 'task_config_error'] as const) {
      expect(retryRefusal(failed({ errorCode: code }), false)?.code).toBe('not_retryable');
    }
    expect(retryRefusal(failed({ retryOf: 2 }), false)?.code).toBe('cannot_retry_a_retry');
    expect(retryRefusal(failed({ retriedBy: 9 }), false)?.code).toBe('already_retried');
    expect(retryRefusal(failed(), true)?.code).toBe('retry_in_progress');
    expect(retryRefusal(failed({ imageUrls: ['https://example.com/a.jpg'], assetSource: 'image_urls' }), false)?.code).toBe('consent_required');
    expect(retryRefusal(failed({ imageUrls: ['asset://3'], assetSource: 'image_urls' }), false)).toBeNull();
    // URLs that asset_ids took priority over were never downloaded; a character photo is a trusted asset.
    expect(retryRefusal(failed({ imageUrls: ['https://example.com/a.jpg'], assetSource: 'asset_ids' }), false)).toBeNull();
    expect(retryRefusal(failed({ imageUrls: ['http://127.0.0.1/files/images/t.jpg'], assetSource: 'image_urls' }), false, () => false)).toBeNull();
    // While the first retry is being saved, a second is told it is starting.
    expect(retryRefusal(failed({ retriedBy: 9 }), true)?.code).toBe('retry_in_progress');
  });

  it('ends a retry of a simulated failure done, unless the marker was sticky', () => {
    expect(retryOutcome(failed())).toBe('done');
    expect(retryOutcome(failed({ sticky: true }))).toBe('upstream_busy');
  });
});
