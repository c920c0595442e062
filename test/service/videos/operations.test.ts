import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../src/emitter/index.js';
import { parseEvent } from '../../../src/protocol/events.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import type { Result } from '../../../src/service/http/result.js';
import { Service, type Caller, type ImageFetcher } from '../../../src/service/service.js';
import { createBatch, createVideo, deleteVideo, getAccount, getVideo, listVideos, retryVideo } from '../../../src/service/videos/operations.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const services: Service[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Sent {
  url: string;
  secret: string;
  event: string;
  payload: Record<string, unknown>;
}

function fakeEmitter() {
  const sent: Sent[] = [];
  const emitter = { send: async (input: Sent) => void sent.push(input), stop: async () => undefined } as unknown as WebhookEmitter;
  return { emitter, sent };
}

async function open(options: { balance?: number; file?: string | false; clock?: SimulatedClock; fetchImage?: ImageFetcher } = {}) {
  const clock = options.clock ?? new SimulatedClock({ frozen: true, start: T0 });
  const { emitter, sent } = fakeEmitter();
  const service = await Service.open({ file: options.file ?? false, clock, emitter, ...(options.balance === undefined ? {} : { balance: options.balance }), random: () => 0.5, ...(options.fetchImage ? { fetchImage: options.fetchImage } : {}) });
  services.push(service);
  const guard = await service.guard(`Bearer ${service.first().apiKey}`, { lowBalanceOk: true });
  if (!guard.ok) throw new Error('guard');
  return { service, clock, sent, caller: guard.caller };
}

const body = (result: Result) => result.body as Record<string, any>;

describe('guard (spec 4, 5, 8)', () => {
  it('tells a missing header from an unknown key, both 401 with WWW-Authenticate', async () => {
    const { service } = await open();
    for (const [header, code] of [[undefined, 'invalid_auth_header'], ['Token abc', 'invalid_auth_header'], ['Bearer sk_unknown_key', 'invalid_api_key']] as const) {
      const guard = await service.guard(header);
      expect(guard.ok).toBe(false);
      if (guard.ok) continue;
      expect(guard.result).toMatchObject({ status: 401, body: { code } });
      expect(guard.result.headers?.['www-authenticate']).toMatch(/^Bearer realm="cliphook"/);
    }
  });

  it('lets 60 requests a minute through per key with the rate headers, then 429 with Retry-After', async () => {
    const { service, clock } = await open();
    const header = `Bearer ${service.first().apiKey}`;
    // The open() above used one.
    for (let i = 2; i <= 60; i++) expect(await service.guard(header)).toMatchObject({ ok: true, caller: { headers: { 'x-ratelimit-remaining': String(60 - i) } } });
    const limited = await service.guard(header);
    expect(limited).toMatchObject({ ok: false, result: { status: 429, body: { code: 'rate_limit_exceeded', retry_after: 60 }, headers: { 'retry-after': '60', 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0' } } });
    await clock.advance(60_000);
    expect((await service.guard(header)).ok).toBe(true);
  });

  it('answers 402 below 10 credits on every keyed endpoint, except the settings', async () => {
    const { service } = await open({ balance: 9 });
    const header = `Bearer ${service.first().apiKey}`;
    expect(await service.guard(header)).toMatchObject({ ok: false, result: { status: 402, body: { code: 'insufficient_credits', required: 10, balance: 9, user_action: { kind: 'top_up' } } } });
    expect((await service.guard(header, { lowBalanceOk: true })).ok).toBe(true);
  });
});

describe('POST /videos', () => {
  it('answers 202 with CreateVideoResponse, charges up front, and the clip runs its course with a signed webhook', async () => {
    const { service, clock, caller, sent } = await open();
    const created = await createVideo(service, caller, { prompt: 'a fox', duration: 10, model: 'cinema', callback_url: 'http://127.0.0.1:3000/hooks' });
    expect(created).toMatchObject({ status: 202, body: { id: 1, status: 'pending', credits_used: 27, model: 'cinema', callback_enabled: true, poll_url: 'http://127.0.0.1:8080/v1/videos/1', warnings: [{ code: 'callback_url_not_https' }] } });
    expect(caller.account.balance).toBe(973);
    await clock.advance(10_000);
    expect(body(getVideo(service, caller, '1'))).toMatchObject({ status: 'done', credits_used: 27, video_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8080\/v1\/media\/1\.mp4\?exp=\d+&sig=[0-9a-f]{64}$/) });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ url: 'http://127.0.0.1:3000/hooks', secret: service.first().webhookSecret, event: 'video.completed' });
    expect(parseEvent({ event: sent[0]!.event, ...sent[0]!.payload, delivered_at: new Date(clock.now()).toISOString() })).toMatchObject({ id: 1, credits_used: 27 });
  });

  it('refuses what it cannot pay for with 402 required and balance, creating nothing', async () => {
    const { service, caller } = await open({ balance: 20 });
    const result = await createVideo(service, caller, { prompt: 'x', model: 'cinema-fullhd', duration: 10 });
    expect(result).toMatchObject({ status: 402, body: { code: 'insufficient_credits', required: 135, balance: 20, user_action: { kind: 'top_up', url: 'http://127.0.0.1:8080/settings/top-up' } } });
    expect(body(listVideos(service, caller, {})).total).toBe(0);
  });

  it('answers the request-level simulate: codes without charging, and ends task-level ones in error with a refund', async () => {
    const { service, clock, caller, sent } = await open();
    for (const [code, status] of [
      ['upstream_busy', 503], ['generation_paused', 503], ['no_session_available', 503], ['moderation_pending', 503], ['task_create_failed', 500],
      ['internal_error', 500], ['region_unavailable', 451], ['photo_rejected', 422], ['image_fetch_failed', 422],
    ] as const) {
      const marker = code === 'upstream_busy' || code === 'image_fetch_failed' ? `request:${code}` : code;
      expect(await createVideo(service, caller, { prompt: `x simulate:${marker}` })).toMatchObject({ status, body: { code } });
    }
    expect(caller.account.balance).toBe(1000);
    const failing = await createVideo(service, caller, { prompt: 'x simulate:content_rejected', callback_url: 'https://example.com/hooks' });
    expect(failing.status).toBe(202);
    await clock.advance(10_000);
    expect(body(getVideo(service, caller, String(body(failing).id)))).toMatchObject({ status: 'error', error_code: 'content_rejected', credits_used: 0, refunded: true });
    expect(caller.account.balance).toBe(1000);
    expect(sent.map((s) => [s.event, s.payload.error_code])).toEqual([['video.failed', 'content_rejected']]);
  });

  it('replays an idempotent request, refuses another body under its key, and releases a key whose request failed', async () => {
    const { service, caller } = await open();
    const first = await createVideo(service, caller, { prompt: 'a fox' }, 'key-1');
    const again = await createVideo(service, caller, { prompt: 'a fox' }, 'key-1');
    expect(again).toMatchObject({ status: 202, body: body(first), headers: { 'idempotent-replayed': 'true' } });
    expect(await createVideo(service, caller, { prompt: 'a cat' }, 'key-1')).toMatchObject({ status: 422, body: { code: 'idempotency_key_reused' } });
    expect(await createVideo(service, caller, { prompt: 'x', duration: 99 }, 'key-2')).toMatchObject({ status: 400 });
    expect((await createVideo(service, caller, { prompt: 'x' }, 'key-2')).status).toBe(202);
    expect(await createVideo(service, caller, { prompt: 'x' }, 'bad key')).toMatchObject({ status: 400, body: { code: 'invalid_idempotency_key' } });
    expect(caller.account.balance).toBe(1000 - 9 - 9);
  });

  it('50 concurrent identical idempotent requests make one task and one charge; the one still running answers 409', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const fetchImage: ImageFetcher = async () => {
      await gate;
      return { ok: true };
    };
    const { service, caller } = await open({ fetchImage });
    const request = { image_urls: ['https://example.com/a.jpg'], subject_consent: 'self' };
    const results = Array.from({ length: 50 }, () => createVideo(service, caller, request, 'same'));
    const early = await Promise.race([Promise.all(results.slice(1)), new Promise((resolve) => setTimeout(resolve, 20, 'pending'))]);
    expect((early as Result[]).map((r) => r.status)).toEqual(Array(49).fill(409));
    release();
    expect((await results[0]!).status).toBe(202);
    expect(body(listVideos(service, caller, {})).total).toBe(1);
    expect(caller.account.balance).toBe(991);
  });

  it('50 concurrent spends against a small balance never go below zero and add up', async () => {
    const { service, caller } = await open({ balance: 100 });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => createVideo(service, caller, { prompt: `clip ${i}` })));
    const created = results.filter((r) => r.status === 202);
    expect(created).toHaveLength(11);
    expect(results.filter((r) => r.status === 402)).toHaveLength(39);
    expect(caller.account.balance).toBe(100 - 11 * 9);
  });

  it('checks asset_ids and image URLs: the caller\'s own trusted assets, and a failed download is 422', async () => {
    const fetchImage: ImageFetcher = async (url) => (url.includes('broken') ? { ok: false, code: 'image_fetch_failed', detail: 'The server answered 404.' } : { ok: true });
    const { service, caller } = await open({ fetchImage });
    expect(await createVideo(service, caller, { asset_ids: [7] })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    expect(await createVideo(service, caller, { image_urls: ['https://example.com/broken.jpg'], subject_consent: 'self' })).toMatchObject({ status: 422, body: { code: 'image_fetch_failed' } });
    expect(await createVideo(service, caller, { image_urls: ['asset://3'], subject_consent: 'self' })).toMatchObject({ status: 400, body: { code: 'invalid_image_url' } });
    expect(caller.account.balance).toBe(1000);
  });
});

describe('POST /videos/batch', () => {
  it('answers 207 with one charge for the total and a task per item', async () => {
    const { service, caller } = await open();
    const result = await createBatch(service, caller, { defaults: { model: 'cinema' }, items: [{ prompt: 'a' }, { prompt: 'b', duration: 10 }] });
    expect(result).toMatchObject({ status: 207, body: { total_credits_used: 14 + 27, items_count: 2, items: [{ index: 0, ok: true, id: 1 }, { index: 1, ok: true, id: 2 }] } });
    expect(caller.account.balance).toBe(1000 - 41);
  });

  it('creates nothing when any item fails, naming it with item_index; 402 when the total is above the balance', async () => {
    const { service, caller } = await open({ balance: 30 });
    expect(await createBatch(service, caller, { items: [{ prompt: 'a' }, { prompt: 'b', ratio: 'x' }] })).toMatchObject({ status: 400, body: { code: 'invalid_ratio', item_index: 1 } });
    expect(await createBatch(service, caller, { items: [{ prompt: 'a' }, { prompt: 'b simulate:generation_paused' }] })).toMatchObject({ status: 503, body: { item_index: 1 } });
    expect(await createBatch(service, caller, { items: [{ prompt: 'a' }, { prompt: 'b' }, { prompt: 'c' }, { prompt: 'd' }] })).toMatchObject({ status: 402, body: { required: 36, balance: 30 } });
    expect(await createBatch(service, caller, { items: Array(6).fill({ prompt: 'a' }) })).toMatchObject({ status: 400, body: { code: 'batch_too_large' } });
    expect(body(listVideos(service, caller, {})).total).toBe(0);
    expect(caller.account.balance).toBe(30);
  });
});

describe('GET, list, DELETE, retry', () => {
  it('hides another account\'s task as 404, lists newest first with filters, and refuses bad parameters', async () => {
    const { service, caller } = await open();
    for (let i = 0; i < 3; i++) await createVideo(service, caller, { prompt: `clip ${i}` });
    const other = service.accounts.create({ balance: 100 });
    const stranger: Caller = { account: other.account, key: other.key, headers: {} };
    expect(getVideo(service, stranger, '1')).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(getVideo(service, caller, 'abc').status).toBe(404);
    expect(body(listVideos(service, caller, { limit: '2' }))).toMatchObject({ total: 3, limit: 2, offset: 0, data: [{ id: 3 }, { id: 2 }] });
    expect(body(listVideos(service, caller, { status: 'pending', offset: '2' })).data.map((v: { id: number }) => v.id)).toEqual([1]);
    for (const query of [{ limit: '0' }, { limit: '101' }, { offset: '-1' }, { status: 'lost' }]) expect(listVideos(service, caller, query)).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
  });

  it('cancels and refunds a queued clip, refuses a rendering one, deletes a finished one', async () => {
    const { service, clock, caller } = await open();
    await createVideo(service, caller, { prompt: 'a' });
    expect(await deleteVideo(service, caller, '1')).toMatchObject({ status: 200, body: { success: true, action: 'cancelled', id: 1, credits_refunded: 9 } });
    await createVideo(service, caller, { prompt: 'b' });
    await clock.advance(1_500);
    expect(await deleteVideo(service, caller, '2')).toMatchObject({ status: 409, body: { code: 'already_rendering' } });
    await clock.advance(10_000);
    expect(await deleteVideo(service, caller, '2')).toMatchObject({ status: 200, body: { action: 'deleted', credits_refunded: 0 } });
    expect(getVideo(service, caller, '2').status).toBe(404);
    expect(caller.account.balance).toBe(991);
  });

  it('retries a retryable failure once, at the API price, and it succeeds unless sticky', async () => {
    const { service, clock, caller } = await open();
    await createVideo(service, caller, { prompt: 'a simulate:upstream_timeout', callback_url: 'https://example.com/h' });
    await createVideo(service, caller, { prompt: 'b simulate:upstream_error:sticky' });
    await createVideo(service, caller, { prompt: 'c simulate:content_rejected' });
    await clock.advance(20_000);
    const retry = await retryVideo(service, caller, '1');
    expect(retry).toMatchObject({ status: 202, body: { id: 4, retry_of_task_id: 1, free_retry: false, credits_used: 9, callback_url: 'https://example.com/h' } });
    expect(await retryVideo(service, caller, '1')).toMatchObject({ status: 409, body: { code: 'already_retried' } });
    expect(await retryVideo(service, caller, '4')).toMatchObject({ status: 400, body: { code: 'not_failed' } });
    expect(await retryVideo(service, caller, '3')).toMatchObject({ status: 400, body: { code: 'not_retryable' } });
    await retryVideo(service, caller, '2');
    await clock.advance(20_000);
    expect(body(getVideo(service, caller, '4')).status).toBe('done');
    expect(body(getVideo(service, caller, '5'))).toMatchObject({ status: 'error', error_code: 'upstream_error' });
    expect(await retryVideo(service, caller, '4')).toMatchObject({ status: 400, body: { code: 'not_failed' } });
    expect(await retryVideo(service, caller, '5')).toMatchObject({ status: 400, body: { code: 'cannot_retry_a_retry' } });
  });

  it('shows balance and API usage on GET /account', async () => {
    const { service, caller } = await open();
    await createVideo(service, caller, { prompt: 'a' });
    expect(body(getAccount(service, caller))).toMatchObject({ balance: 991, api_usage: { credits_spent: 9, videos_created: 1, videos_in_progress: 1 } });
  });
});

describe('restart', () => {
  it('resumes a clip that was rendering when the service stopped: it finishes and its webhook is sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-service-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const first = await open({ file });
    await createVideo(first.service, first.caller, { prompt: 'a', callback_url: 'https://example.com/hooks' });
    await first.clock.advance(1_500);
    expect(body(getVideo(first.service, first.caller, '1')).status).toBe('generating');
    await services.pop()!.close();
    const second = await open({ file, clock: new SimulatedClock({ frozen: true, start: T0 + 3_600_000 }) });
    await second.clock.advance(0);
    expect(body(getVideo(second.service, second.caller, '1')).status).toBe('done');
    expect(second.sent.map((s) => s.event)).toEqual(['video.completed']);
    expect(second.service.first().balance).toBe(991);
  });
});
