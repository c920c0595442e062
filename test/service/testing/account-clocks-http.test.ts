import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { IDEMPOTENCY_WINDOW_MS } from '../../../src/service/core/idempotency.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22: a clock per account, as Stripe's test clocks. An API key's advance moves only its account's
// clips, links, idempotency records, rate window and webhook retries; the admin token's moves every account.

const ADMIN = 'adm_clocks_admin_token_0123456789';
const DAY = 86_400;
let clock: SimulatedClock;
let service: Service;
let client: ServiceClient;
let hooks: Server;
let hooksUrl: string;
/** What reached the webhook receiver, and the statuses it answers with, in turn (then 200). */
let received: Array<{ id: number; delivered_at: string; completed_at: string }>;
let answers: number[];

beforeAll(async () => {
  clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-06-01T09:00:00Z') });
  service = await Service.open({ file: false, clock, adminToken: ADMIN, rateLimitPerMinute: 5, warn: () => undefined });
  client = await serviceClient(service);
  hooks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(answers.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
  hooksUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  await client.close();
  await service.close();
  await new Promise((resolve) => hooks.close(resolve));
});

let a: { id: number; api_key: string };
let b: { id: number; api_key: string };
beforeEach(async () => {
  received = [];
  answers = [];
  a = (await client.post('/test_helpers/accounts', { name: 'a' }, { key: ADMIN })).body;
  b = (await client.post('/test_helpers/accounts', { name: 'b' }, { key: ADMIN })).body;
});

const advance = (key: string, seconds: number) => client.post('/test_helpers/clock/advance', { seconds }, { key });
const nowOf = async (key: string) => Date.parse((await client.get('/test_helpers/clock', { key })).body.now);
/** A signed link, fetched from the service the client talks to. */
const open = (link: string) => fetch(`${client.origin}${new URL(link).pathname}${new URL(link).search}`);
const status = async (key: string, id: number) => (await client.get(`/v1/videos/${id}`, { key })).body.status as string;

describe('a clock per account (issue 22)', () => {
  it('an API key moves its own account’s time only; the admin token’s moves every account', async () => {
    const before = { a: await nowOf(a.api_key), b: await nowOf(b.api_key), service: await nowOf(ADMIN) };
    const moved = await advance(a.api_key, 8 * DAY);
    expect(moved).toMatchObject({ status: 200, body: { object: 'test_clock', account: a.id, ahead_seconds: 8 * DAY, advanced_seconds: 8 * DAY } });
    expect(await nowOf(a.api_key)).toBe(before.a + 8 * DAY * 1000);
    expect(await nowOf(b.api_key)).toBe(before.b);
    expect(await nowOf(ADMIN)).toBe(before.service);
    expect((await client.get('/test_helpers/clock', { key: ADMIN })).body).toMatchObject({ account: null, ahead_seconds: 0 });

    const all = await advance(ADMIN, 60);
    expect(all.body).toMatchObject({ account: null, advanced_seconds: 60 });
    expect(await nowOf(a.api_key)).toBe(before.a + (8 * DAY + 60) * 1000);
    expect(await nowOf(b.api_key)).toBe(before.b + 60_000);
  });

  it('another account’s 8 days neither expire my fresh signed link nor finish my clip; my own advance does', async () => {
    const mine = (await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key })).body.id as number;
    const theirs = (await client.post('/v1/videos', { prompt: 'a hen' }, { key: a.api_key })).body.id as number;
    await advance(b.api_key, 10);
    expect(await status(b.api_key, mine)).toBe('done');
    expect(await status(a.api_key, theirs)).toBe('pending');
    const link = (await client.get(`/v1/videos/${mine}`, { key: b.api_key })).body.video_url as string;
    expect((await open(link)).status).toBe(200);

    await advance(a.api_key, 8 * DAY);
    expect(await status(a.api_key, theirs)).toBe('done');
    // The link is read on its owner's time: still fresh.
    expect((await open(link)).status).toBe(200);
    const theirLink = (await client.get(`/v1/videos/${theirs}`, { key: a.api_key })).body.video_url as string;
    await advance(b.api_key, 8 * DAY);
    expect((await open(link)).status).toBe(410);
    expect((await open(theirLink)).status).toBe(200);
  });

  it('image jobs end on their account’s time', async () => {
    const job = await client.post('/v1/images', { description: 'a lighthouse at dawn' }, { key: a.api_key });
    expect(job.status).toBe(202);
    await advance(b.api_key, 3_600);
    expect((await client.get(`/v1/images/${job.body.id}`, { key: a.api_key })).body.status).toBe('generating');
    await client.post('/test_helpers/clock/advance', { seconds: 120, account: a.id }, { key: ADMIN });
    expect((await client.get(`/v1/images/${job.body.id}`, { key: a.api_key })).body.status).toMatch(/^(done|partial)$/);
  });

  it('asset moderation ends on its account’s time', async () => {
    const form = new FormData();
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3a7' } }).png().toBuffer();
    form.append('file', new Blob([new Uint8Array(png)]), 'photo.png');
    const res = await fetch(`${client.origin}/v1/assets`, { method: 'POST', body: form, headers: { authorization: `Bearer ${a.api_key}` } });
    const asset = (await res.json()) as { id: number; status: string };
    expect(asset.status).toBe('pending');
    await advance(b.api_key, 3_600);
    expect((await client.get(`/v1/assets/${asset.id}`, { key: a.api_key })).body.status).toBe('pending');
    await client.post('/test_helpers/clock/advance', { seconds: 120, account: a.id }, { key: ADMIN });
    expect((await client.get(`/v1/assets/${asset.id}`, { key: a.api_key })).body.status).toBe('trusted');
  });

  it('rate windows run on their account’s time; the admin token moves one account with `account`', async () => {
    for (let i = 0; i < 5; i++) expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(200);
    expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(429);
    await advance(b.api_key, 61);
    expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(429);
    const bBefore = await nowOf(b.api_key);
    // Its own key is refused now (the advance is a request of its window too): the admin token names it.
    expect((await advance(a.api_key, 61)).status).toBe(429);
    expect((await client.post('/test_helpers/clock/advance', { seconds: 61, account: a.id }, { key: ADMIN })).body).toMatchObject({ account: a.id, ahead_seconds: 61 });
    expect(await nowOf(b.api_key)).toBe(bBefore);
    expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(200);
    // A key naming another account, or the admin naming none that exists: 400.
    expect(await client.post('/test_helpers/clock/advance', { seconds: 1, account: a.id }, { key: b.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'account' } });
    expect(await client.post('/test_helpers/clock/advance', { seconds: 1, account: 99_999 }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', detail: 'No account 99999.' } });

  });

  it('Idempotency-Key records last 24 hours of their own account’s time', async () => {
    const past = (account: number) => client.post('/test_helpers/clock/advance', { seconds: IDEMPOTENCY_WINDOW_MS / 1000 + 60, account }, { key: ADMIN });
    const first = await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key, headers: { 'idempotency-key': 'order-1' } });
    await past(a.id);
    const replay = await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key, headers: { 'idempotency-key': 'order-1' } });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(first.body.id);
    await past(b.id);
    const fresh = await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key, headers: { 'idempotency-key': 'order-1' } });
    expect(fresh.status).toBe(202);
    expect(fresh.body.id).not.toBe(first.body.id);
  });

  it('webhook retries wait for their own account’s time, and delivered_at is on it', async () => {
    answers = [503, 503];
    await advance(a.api_key, DAY);
    const id = (await client.post('/v1/videos', { prompt: 'a fox', callback_url: hooksUrl }, { key: a.api_key })).body.id as number;
    await advance(a.api_key, 10);
    expect(received.map((event) => event.id)).toEqual([id]);
    // Sent as the clip ended, on its account's time (a day ahead of the service's).
    expect(received[0]!.delivered_at).toBe(received[0]!.completed_at);
    expect(Date.parse(received[0]!.delivered_at)).toBeGreaterThan(await nowOf(ADMIN) + DAY * 1000 - 60_000);

    // Another account's hour brings nothing; the service's own time has not moved either.
    await advance(b.api_key, 3_600);
    expect(received).toHaveLength(1);
    // Its own 30 s bring the first retry (spec 6.4: 30 s), and 2 minutes more the second, each at its instant.
    await advance(a.api_key, 30);
    expect(received).toHaveLength(2);
    expect(Date.parse(received[1]!.delivered_at)).toBe(Date.parse(received[0]!.delivered_at) + 30_000);
    await advance(a.api_key, 5 * 60);
    expect(received).toHaveLength(3);
    expect(Date.parse(received[2]!.delivered_at)).toBe(Date.parse(received[1]!.delivered_at) + 120_000);
    expect(received[2]!.delivered_at >= received[2]!.completed_at).toBe(true);
    const [delivery] = service.emitter.list({ limit: 1 });
    expect(delivery).toMatchObject({ state: 'delivered' });
    await advance(ADMIN, 3 * 3_600);
    expect(received).toHaveLength(3);
  });

  // Found in review: what one account does while it is ahead must not end another's windows or records.
  it('an account ahead that makes requests ends no other account’s rate window or Idempotency-Key record', async () => {
    for (let i = 0; i < 5; i++) expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(200);
    expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(429);
    const first = await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key, headers: { 'idempotency-key': 'order-9' } });
    await client.post('/test_helpers/clock/advance', { seconds: IDEMPOTENCY_WINDOW_MS / 1000 + 3_600, account: b.id }, { key: ADMIN });
    const c = (await client.post('/test_helpers/accounts', { name: 'c' }, { key: ADMIN })).body as { id: number; api_key: string };
    await client.post('/test_helpers/clock/advance', { seconds: IDEMPOTENCY_WINDOW_MS / 1000 + 3_600, account: c.id }, { key: ADMIN });
    // c is a day ahead of a and b's first request: its requests sweep nothing of theirs.
    expect((await client.get('/v1/account', { key: c.api_key })).status).toBe(200);
    expect((await client.post('/v1/videos', { prompt: 'a hen' }, { key: c.api_key, headers: { 'idempotency-key': 'other' } })).status).toBe(202);
    expect((await client.get('/v1/account', { key: a.api_key })).status).toBe(429);
    // b's own record has expired on b's own time only; a fresh account's would not have.
    const again = await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key, headers: { 'idempotency-key': 'order-9' } });
    expect(again.body.id).not.toBe(first.body.id);
  });

  it('a clip the admin seeds for an account ahead follows its plan from that account’s time', async () => {
    await client.post('/test_helpers/clock/advance', { seconds: DAY, account: 1 }, { key: ADMIN });
    const seeded = await client.post('/test_helpers/seed', { clips: [{ name: 'r', account: 'default', status: 'pending' }] }, { key: ADMIN });
    expect(seeded.status).toBe(201);
    const clip = service.state.videos.get(seeded.body.clips.r)!;
    expect(clip.status).toBe('pending');
    expect(clip.createdAt).toBe(clock.nowOf(1));
    expect(clip.createdAt).toBeGreaterThan(clock.nowOf(null));
    await client.post('/test_helpers/clock/advance', { seconds: 10, account: 1 }, { key: ADMIN });
    expect(service.state.videos.get(seeded.body.clips.r)!.status).toBe('done');
  });

  it('a key sees its own account’s pending timers; a deleted account’s time and timers go with it', async () => {
    await client.post('/v1/videos', { prompt: 'a fox' }, { key: a.api_key });
    expect((await client.get('/test_helpers/clock', { key: b.api_key })).body.pending_timers).toBe(0);
    expect((await client.get('/test_helpers/clock', { key: a.api_key })).body.pending_timers).toBe(1);
    await advance(a.api_key, 1);
    expect(service.clock.leads().get(a.id)).toBe(1_000);
    await client.delete(`/test_helpers/accounts/${a.id}`, { key: ADMIN });
    expect(service.clock.leads().has(a.id)).toBe(false);
    expect(service.clock.timersOf(a.id)).toBe(0);
  });

  // Issue 29 item 3: B's own advance took 15 s while A's webhook hung at a receiver that never answers:
  // advances queued, and each waited until no webhook of any account was in flight.
  it('an account’s advance never waits for another account’s webhook held at a receiver that never answers; its own does', async () => {
    const held: ServerResponse[] = [];
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const holder = createServer((req, res) => {
      held.push(res);
      req.resume();
      arrived();
    });
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(holder.address() as AddressInfo).port}/hooks`;
      await client.post('/v1/videos', { prompt: 'a fox', callback_url: url }, { key: a.api_key });
      const theirClip = (await client.post('/v1/videos', { prompt: 'a hen' }, { key: b.api_key })).body.id as number;
      const order: string[] = [];
      // A's advance ends its clip, whose webhook is then held open at the receiver: A's advance waits for it.
      const mine = advance(a.api_key, 10).then((answer) => (order.push('a'), answer));
      await reached;
      // B's advance ends B's clip (and settles it) while A's request is still held.
      const theirs = advance(b.api_key, 60).then((answer) => (order.push('b'), answer));
      await Promise.race([theirs, mine]);
      expect(order).toEqual(['b']);
      expect(await theirs).toMatchObject({ status: 200, body: { account: b.id, advanced_seconds: 60 } });
      expect(await status(b.api_key, theirClip)).toBe('done');
      expect(held).toHaveLength(1);
      expect(service.emitter.stats.inFlight).toBe(1);
      expect(order).toEqual(['b']);
      held[0]!.writeHead(200).end();
      expect(await mine).toMatchObject({ status: 200, body: { account: a.id, advanced_seconds: 10 } });
      expect(order).toEqual(['b', 'a']);
      expect(service.emitter.list({ limit: 1 })[0]).toMatchObject({ state: 'delivered' });
    } finally {
      holder.closeAllConnections();
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 40_000);

  it('reset gives every account the service’s time again', async () => {
    await advance(a.api_key, 3_600);
    expect(service.clock.leadOf(a.id)).toBe(3_600_000);
    await client.post('/test_helpers/reset', {}, { key: ADMIN });
    expect(service.clock.leads().size).toBe(0);
  });
});
