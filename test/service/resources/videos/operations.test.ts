import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { parseEvent } from '../../../../src/protocol/events.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service, type ImageFetcher } from '../../../../src/service/service.js';
import { serviceClient, type Answer, type ServiceClient } from '../../../helpers/service-client.js';

// The clip operations (spec 4.1-4.6, 4.16) through the real HTTP contract (issue 21): the same request
// answers the same status, code and body as a client sees them.

const T0 = Date.parse('2026-01-01T00:00:00Z');
const services: Service[] = [];
const clients: ServiceClient[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
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
  const client = await serviceClient(service);
  clients.push(client);
  /** The first account's balance, as it is now. */
  const balance = () => service.first().balance;
  return { service, client, clock, sent, balance };
}

const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });

describe('the gate (spec 4, 5, 8)', () => {
  it('tells a missing header from an unknown key, both 401 with WWW-Authenticate', async () => {
    const { client } = await open();
    for (const [options, code] of [
      [{ key: null }, 'invalid_auth_header'],
      [{ key: null, headers: { authorization: 'Token abc' } }, 'invalid_auth_header'],
      [{ key: 'sk_unknown_key' }, 'invalid_api_key'],
    ] as const) {
      const answer = await client.get('/account', options);
      expect(answer).toMatchObject({ status: 401, body: { code } });
      expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="cliphook"/);
    }
  });

  it('lets 60 requests a minute through per key with the rate headers, then 429 with Retry-After', async () => {
    const { client, clock } = await open();
    for (let i = 1; i <= 60; i++) expect(await client.get('/account')).toMatchObject({ status: 200, headers: { 'x-ratelimit-remaining': String(60 - i) } });
    const limited = await client.get('/account');
    expect(limited).toMatchObject({ status: 429, body: { code: 'rate_limit_exceeded', retry_after: 60 }, headers: { 'retry-after': '60', 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0' } });
    await clock.advance(60_000);
    expect((await client.get('/account')).status).toBe(200);
  });

  it('answers 402 below 10 credits on every keyed endpoint, except the settings', async () => {
    const { client } = await open({ balance: 9 });
    expect(await client.get('/account')).toMatchObject({ status: 402, body: { code: 'insufficient_credits', required: 10, balance: 9, user_action: { kind: 'top_up' } } });
    expect((await client.get('/settings/keys')).status).toBe(200);
  });
});

describe('POST /videos', () => {
  it('answers 202 with CreateVideoResponse, charges up front, and the clip runs its course with a signed webhook', async () => {
    const { service, client, clock, sent, balance } = await open();
    const created = await client.post('/videos', { prompt: 'a fox', duration: 10, model: 'cinema', callback_url: 'http://127.0.0.1:3000/hooks' });
    expect(created).toMatchObject({ status: 202, body: { id: 1, status: 'pending', credits_used: 27, model: 'cinema', callback_enabled: true, poll_url: 'http://127.0.0.1:8080/v1/videos/1', warnings: [{ code: 'callback_url_not_https' }] } });
    expect(balance()).toBe(973);
    await clock.advance(10_000);
    expect((await client.get('/videos/1')).body).toMatchObject({ status: 'done', credits_used: 27, video_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8080\/v1\/media\/1\.mp4\?exp=\d+&sig=[0-9a-f]{64}$/) });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ url: 'http://127.0.0.1:3000/hooks', secret: service.first().webhookSecret, event: 'video.completed' });
    expect(parseEvent({ event: sent[0]!.event, ...sent[0]!.payload, delivered_at: new Date(clock.now()).toISOString() })).toMatchObject({ id: 1, credits_used: 27 });
  });

  it('refuses what it cannot pay for with 402 required and balance, creating nothing', async () => {
    const { client } = await open({ balance: 20 });
    const result = await client.post('/videos', { prompt: 'x', model: 'cinema-fullhd', duration: 10 });
    expect(result).toMatchObject({ status: 402, body: { code: 'insufficient_credits', required: 135, balance: 20, user_action: { kind: 'top_up', url: 'http://127.0.0.1:8080/settings/top-up' } } });
    expect((await client.get('/videos')).body.total).toBe(0);
  });

  it('answers the request-level simulate: codes without charging, and ends task-level ones in error with a refund', async () => {
    const { client, clock, sent, balance } = await open();
    for (const [code, status] of [
      ['upstream_busy', 503], ['generation_paused', 503], ['no_session_available', 503], ['moderation_pending', 503], ['task_create_failed', 500],
      ['internal_error', 500], ['region_unavailable', 451], ['photo_rejected', 422], ['image_fetch_failed', 422],
    ] as const) {
      const marker = code === 'upstream_busy' || code === 'image_fetch_failed' ? `request:${code}` : code;
      expect(await client.post('/videos', { prompt: `x simulate:${marker}` })).toMatchObject({ status, body: { code } });
    }
    expect(balance()).toBe(1000);
    const failing = await client.post('/videos', { prompt: 'x simulate:content_rejected', callback_url: 'https://example.com/hooks' });
    expect(failing.status).toBe(202);
    await clock.advance(10_000);
    expect((await client.get(`/videos/${failing.body.id}`)).body).toMatchObject({ status: 'error', error_code: 'content_rejected', credits_used: 0, refunded: true });
    expect(balance()).toBe(1000);
    expect(sent.map((s) => [s.event, s.payload.error_code])).toEqual([['video.failed', 'content_rejected']]);
  });

  it('replays an idempotent request, refuses another body under its key, and releases a key whose request failed', async () => {
    const { client, balance } = await open();
    const first = await client.post('/videos', { prompt: 'a fox' }, withKey('key-1'));
    const again = await client.post('/videos', { prompt: 'a fox' }, withKey('key-1'));
    expect(again).toMatchObject({ status: 202, body: first.body, headers: { 'idempotent-replayed': 'true' } });
    expect(await client.post('/videos', { prompt: 'a cat' }, withKey('key-1'))).toMatchObject({ status: 422, body: { code: 'idempotency_key_reused' } });
    expect(await client.post('/videos', { prompt: 'x', duration: 99 }, withKey('key-2'))).toMatchObject({ status: 400 });
    expect((await client.post('/videos', { prompt: 'x' }, withKey('key-2'))).status).toBe(202);
    expect(await client.post('/videos', { prompt: 'x' }, withKey('bad key'))).toMatchObject({ status: 400, body: { code: 'invalid_idempotency_key' } });
    expect(balance()).toBe(1000 - 9 - 9);
  });

  it('50 concurrent identical idempotent requests make one task and one charge; the one still running answers 409', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let downloads = 0;
    const fetchImage: ImageFetcher = async () => {
      downloads++;
      await gate;
      return { ok: true };
    };
    const { client, balance } = await open({ fetchImage });
    const request = { image_urls: ['https://example.com/a.jpg'], subject_consent: 'self' };
    // Over HTTP any one of them may be first: it holds the key (its photo is being checked), the 49 others answer 409 meanwhile.
    const settled: Answer[] = [];
    const results = Array.from({ length: 50 }, () => client.post('/videos', request, withKey('same')).then((answer) => (settled.push(answer), answer)));
    await vi.waitFor(() => expect(settled).toHaveLength(49), { timeout: 5_000 });
    expect(settled.map((r) => r.status)).toEqual(Array(49).fill(409));
    expect(downloads).toBe(1);
    release();
    const all = await Promise.all(results);
    expect(all.filter((r) => r.status === 202)).toHaveLength(1);
    expect((await client.get('/videos')).body.total).toBe(1);
    expect(balance()).toBe(991);
  });

  it('50 concurrent spends against a small balance never go below zero and add up', async () => {
    const { client, balance } = await open({ balance: 100 });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => client.post('/videos', { prompt: `clip ${i}` })));
    const created = results.filter((r) => r.status === 202);
    expect(created).toHaveLength(11);
    expect(results.filter((r) => r.status === 402)).toHaveLength(39);
    expect(balance()).toBe(100 - 11 * 9);
  });

  it('checks asset_ids and image URLs: the caller\'s own trusted assets, and a failed download is 422', async () => {
    const fetchImage: ImageFetcher = async (url) => (url.includes('broken') ? { ok: false, code: 'image_fetch_failed', detail: 'The server answered 404.' } : { ok: true });
    const { client, balance } = await open({ fetchImage });
    expect(await client.post('/videos', { asset_ids: [7] })).toMatchObject({ status: 400, body: { code: 'invalid_asset_id' } });
    expect(await client.post('/videos', { image_urls: ['https://example.com/broken.jpg'], subject_consent: 'self' })).toMatchObject({ status: 422, body: { code: 'image_fetch_failed' } });
    expect(await client.post('/videos', { image_urls: ['asset://3'], subject_consent: 'self' })).toMatchObject({ status: 400, body: { code: 'invalid_image_url' } });
    expect(balance()).toBe(1000);
  });
});

describe('POST /videos/batch', () => {
  it('answers 207 with one charge for the total and a task per item', async () => {
    const { client, balance } = await open();
    const result = await client.post('/videos/batch', { defaults: { model: 'cinema' }, items: [{ prompt: 'a' }, { prompt: 'b', duration: 10 }] });
    expect(result).toMatchObject({ status: 207, body: { total_credits_used: 14 + 27, items_count: 2, items: [{ index: 0, ok: true, id: 1 }, { index: 1, ok: true, id: 2 }] } });
    expect(balance()).toBe(1000 - 41);
  });

  it('creates nothing when any item fails, naming it with item_index; 402 when the total is above the balance', async () => {
    const { client, balance } = await open({ balance: 30 });
    expect(await client.post('/videos/batch', { items: [{ prompt: 'a' }, { prompt: 'b', ratio: 'x' }] })).toMatchObject({ status: 400, body: { code: 'invalid_ratio', item_index: 1 } });
    expect(await client.post('/videos/batch', { items: [{ prompt: 'a' }, { prompt: 'b simulate:generation_paused' }] })).toMatchObject({ status: 503, body: { item_index: 1 } });
    expect(await client.post('/videos/batch', { items: [{ prompt: 'a' }, { prompt: 'b' }, { prompt: 'c' }, { prompt: 'd' }] })).toMatchObject({ status: 402, body: { required: 36, balance: 30 } });
    expect(await client.post('/videos/batch', { items: Array(6).fill({ prompt: 'a' }) })).toMatchObject({ status: 400, body: { code: 'batch_too_large' } });
    expect((await client.get('/videos')).body.total).toBe(0);
    expect(balance()).toBe(30);
  });
});

describe('GET, list, DELETE, retry', () => {
  it('hides another account\'s task as 404, lists newest first with filters, and refuses bad parameters', async () => {
    const { service, client } = await open();
    for (let i = 0; i < 3; i++) await client.post('/videos', { prompt: `clip ${i}` });
    const other = service.accounts.create({ balance: 100 });
    expect(await client.get('/videos/1', { key: other.key.token })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect((await client.get('/videos/abc')).status).toBe(404);
    expect((await client.get('/videos?limit=2')).body).toMatchObject({ total: 3, limit: 2, offset: 0, data: [{ id: 3 }, { id: 2 }] });
    expect((await client.get('/videos?status=pending&offset=2')).body.data.map((v: { id: number }) => v.id)).toEqual([1]);
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'status=lost']) expect(await client.get(`/videos?${query}`)).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
  });

  it('cancels and refunds a queued clip, refuses a rendering one, deletes a finished one', async () => {
    const { client, clock, balance } = await open();
    await client.post('/videos', { prompt: 'a' });
    expect(await client.delete('/videos/1')).toMatchObject({ status: 200, body: { success: true, action: 'cancelled', id: 1, credits_refunded: 9 } });
    await client.post('/videos', { prompt: 'b' });
    await clock.advance(1_500);
    expect(await client.delete('/videos/2')).toMatchObject({ status: 409, body: { code: 'already_rendering' } });
    await clock.advance(10_000);
    expect(await client.delete('/videos/2')).toMatchObject({ status: 200, body: { action: 'deleted', credits_refunded: 0 } });
    expect((await client.get('/videos/2')).status).toBe(404);
    expect(balance()).toBe(991);
  });

  it('retries a retryable failure once, at the API price, and it succeeds unless sticky', async () => {
    const { client, clock } = await open();
    await client.post('/videos', { prompt: 'a simulate:upstream_timeout', callback_url: 'https://example.com/h' });
    await client.post('/videos', { prompt: 'b simulate:upstream_error:sticky' });
    await client.post('/videos', { prompt: 'c simulate:content_rejected' });
    await clock.advance(20_000);
    const retry = await client.post('/videos/1/retry');
    expect(retry).toMatchObject({ status: 202, body: { id: 4, retry_of_task_id: 1, free_retry: false, credits_used: 9, callback_url: 'https://example.com/h' } });
    expect(await client.post('/videos/1/retry')).toMatchObject({ status: 409, body: { code: 'already_retried' } });
    expect(await client.post('/videos/4/retry')).toMatchObject({ status: 400, body: { code: 'not_failed' } });
    expect(await client.post('/videos/3/retry')).toMatchObject({ status: 400, body: { code: 'not_retryable' } });
    await client.post('/videos/2/retry');
    await clock.advance(20_000);
    expect((await client.get('/videos/4')).body.status).toBe('done');
    expect((await client.get('/videos/5')).body).toMatchObject({ status: 'error', error_code: 'upstream_error' });
    expect(await client.post('/videos/4/retry')).toMatchObject({ status: 400, body: { code: 'not_failed' } });
    expect(await client.post('/videos/5/retry')).toMatchObject({ status: 400, body: { code: 'cannot_retry_a_retry' } });
  });

  it('shows balance and API usage on GET /account', async () => {
    const { client } = await open();
    await client.post('/videos', { prompt: 'a' });
    expect((await client.get('/account')).body).toMatchObject({ balance: 991, api_usage: { credits_spent: 9, videos_created: 1, videos_in_progress: 1 } });
  });
});

describe('restart', () => {
  it('resumes a clip that was rendering when the service stopped: it finishes and its webhook is sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-service-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const first = await open({ file });
    await first.client.post('/videos', { prompt: 'a', callback_url: 'https://example.com/hooks' });
    await first.clock.advance(1_500);
    expect((await first.client.get('/videos/1')).body.status).toBe('generating');
    await clients.pop()!.close();
    await services.pop()!.close();
    const second = await open({ file, clock: new SimulatedClock({ frozen: true, start: T0 + 3_600_000 }) });
    await second.clock.advance(0);
    expect((await second.client.get('/videos/1')).body.status).toBe('done');
    expect(second.sent.map((s) => s.event)).toEqual(['video.completed']);
    expect(second.service.first().balance).toBe(991);
  });
});
