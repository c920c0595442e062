import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { BatchRequest, videoCommand } from '../../../../src/service/contract/videos.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import type { Video } from '../../../../src/service/resources/videos/lifecycle.js';
import { retryOutcome, retryRefusal } from '../../../../src/service/resources/videos/retry.js';
import { Service } from '../../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../../helpers/service-client.js';

// A batch's rules are the contract's `BatchRequest` (issue 21): what it accepts is read from its output, what
// it refuses from POST /v1/videos/batch, where a client reads it.
let service: Service;
let client: ServiceClient;
beforeAll(async () => {
  const emitter = { send: async () => undefined, stop: async () => undefined } as unknown as WebhookEmitter;
  service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), emitter, balance: 1_000_000, rateLimitPerMinute: 10_000, fetchImage: async () => ({ ok: true }) });
  client = await serviceClient(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

/** The clip commands a batch body makes (no key default assets). */
function commands(body: unknown) {
  return BatchRequest.parse(body).map((item) => videoCommand(item, { defaultAssetIds: [] }));
}

/** The problem POST /videos/batch answers for `body` (sent as JSON, whatever it is), with the status. */
async function refused(body: unknown): Promise<Record<string, any>> {
  const answer = await client.post('/videos/batch', JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
  if (answer.status < 400) throw new Error(`accepted: ${answer.status}`);
  return { ...answer.body, status: answer.status };
}

describe('POST /videos/batch body (spec 4.2)', () => {
  it('fills omitted fields from defaults and validates each item', () => {
    expect(commands({ defaults: { model: 'cinema', duration: 10 }, items: [{ prompt: 'a' }, { prompt: 'b', duration: 20, model: null }] }).map((c) => [c.prompt, c.model, c.duration])).toEqual([['a', 'cinema', 10], ['b', 'cinema', 20]]);
  });

  it('refuses the whole batch at the first bad item, with item_index', async () => {
    expect(await refused({ items: [{ prompt: 'a' }, { prompt: 'b', duration: 99 }, { ratio: 'x' }] })).toMatchObject({ status: 400, code: 'invalid_duration', item_index: 1 });
    // Issue 21: an item that is not an object breaks the rule of items (invalid_parameter), no longer invalid_json.
    expect(await refused({ items: [{ prompt: 'a' }, 'x'] })).toMatchObject({ status: 400, code: 'invalid_parameter', item_index: 1 });
    expect(await refused({ items: [{ image_urls: ['https://example.com/a.jpg'] }] })).toMatchObject({ status: 422, code: 'consent_required', item_index: 0 });
    // The rules the clip command checks (an item of nothing, the callback URL's safety) name their item too.
    expect(await refused({ items: [{ prompt: 'a' }, { duration: 5 }] })).toMatchObject({ status: 400, code: 'missing_input', item_index: 1, detail: expect.stringMatching(/^items\[1\]: /) });
    expect(await refused({ items: [{ prompt: 'a' }, { prompt: 'b', callback_url: 'http://example.com/h' }] })).toMatchObject({ status: 400, code: 'invalid_callback_url', item_index: 1 });
    expect((await client.get('/videos')).body.total).toBe(0);
  });

  it('takes 1-5 items: batch_too_large above, invalid_parameter for none or a body without items, invalid_json for a body that is no object', async () => {
    const item = { prompt: 'a' };
    expect(commands({ items: Array(5).fill(item) })).toHaveLength(5);
    expect(await refused({ items: Array(6).fill(item) })).toMatchObject({ status: 400, code: 'batch_too_large' });
    // Issue 21: well-formed JSON that breaks a rule answers the documented code of its kind; only a body that is no object is invalid_json.
    for (const body of [{ items: [] }, {}, { items: 'a' }, { items: [item], defaults: [1] }]) {
      expect(await refused(body)).toMatchObject({ status: 400, code: 'invalid_parameter' });
    }
    for (const body of [[], null]) expect(await refused(body)).toMatchObject({ status: 400, code: 'invalid_json' });
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
