import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { SharpRenderer } from '../../../src/service/resources/images/render.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22 over HTTP: POST /test_helpers/seed, and the `seed` option of startService / Service.open.

let service: Service;
let client: ServiceClient;
// Issue 29 follow-up item 6: on a frozen simulated clock, moved by the tests, never on real time (a clip's
// start "within 1.5 s" of real time failed under load). With random 0.5 a seeded pending clip starts 1 s
// after it is made (fast speed: 0.5-1.5 s) and renders for 3 s (2-4 s).
const clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-03-01T12:00:00Z') });
const ADMIN = 'adm_seed_admin_token_0123456789ab';
beforeAll(async () => {
  service = await Service.open({ file: false, clock, random: () => 0.5, adminToken: ADMIN, balance: 500, warn: () => undefined });
  client = await serviceClient(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

const FIXTURE = {
  accounts: [{ name: 'alice', balance: 300 }, { name: 'bob' }],
  assets: [{ name: 'face', account: 'alice' }, { name: 'box', account: 'default', sample: 'product' }],
  clips: [
    { name: 'finished', account: 'alice', status: 'done', prompt: 'a fox' },
    { name: 'failed', account: 'alice', status: 'error', error_code: 'upstream_busy' },
    { name: 'final', account: 'alice', status: 'error', error_code: 'content_rejected' },
    { name: 'waiting', account: 'bob', status: 'pending' },
    { name: 'rendering', account: 'default', status: 'generating' },
    { name: 'stopped', account: 'bob', status: 'cancelled' },
  ],
  images: [
    { name: 'poster', account: 'alice', status: 'done' },
    { name: 'half', account: 'alice', status: 'partial', count: 4 },
    { name: 'refused', account: 'bob', status: 'failed', error_code: 'prompt_blocked' },
  ],
};

describe('seed (issue 22)', () => {
  it('makes accounts, assets, clips and image jobs, answering their ids by name', async () => {
    const seeded = await client.post('/test_helpers/seed', FIXTURE, { key: ADMIN });
    expect(seeded.body).toMatchObject({ accounts: expect.any(Object) });
    expect(seeded.status).toBe(201);
    const { accounts, assets, clips, images } = seeded.body;
    expect(Object.keys(accounts)).toEqual(['alice', 'bob']);
    const alice = accounts.alice.api_key;
    expect((await client.get('/v1/account', { key: alice })).body).toMatchObject({ balance: 300 });
    expect((await client.get('/v1/account', { key: accounts.bob.api_key })).body).toMatchObject({ balance: 500 });
    expect((await client.get(`/v1/assets/${assets.face}`, { key: alice })).body).toMatchObject({ status: 'trusted' });
    expect((await client.get(`/v1/assets/${assets.box}`)).body).toMatchObject({ status: 'trusted' });

    // A done clip has working signed links.
    const done = (await client.get(`/v1/videos/${clips.finished}`, { key: alice })).body;
    expect(done).toMatchObject({ status: 'done', prompt: 'a fox' });
    const link = new URL(done.video_url);
    const media = await client.get(`${link.pathname}${link.search}`, { key: null });
    expect(media.status).toBe(200);

    // An error clip with a retryable code can be retried; one with a final code cannot.
    expect((await client.get(`/v1/videos/${clips.failed}`, { key: alice })).body).toMatchObject({ status: 'error', error_code: 'upstream_busy' });
    expect(await client.post(`/v1/videos/${clips.failed}/retry`, undefined, { key: alice })).toMatchObject({ status: 202 });
    expect(await client.post(`/v1/videos/${clips.final}/retry`, undefined, { key: alice })).toMatchObject({ status: 400, body: { code: 'not_retryable' } });

    // On the service's simulated clock: a pending clip waits until its start, then renders; a rendering one ends on its plan.
    const status = async (id: number, key?: string) => (await client.get(`/v1/videos/${id}`, key === undefined ? {} : { key })).body.status;
    expect(await status(clips.waiting, accounts.bob.api_key)).toBe('pending');
    expect(await status(clips.rendering)).toBe('generating');
    await clock.advance(999);
    expect(await status(clips.waiting, accounts.bob.api_key)).toBe('pending');
    await clock.advance(1);
    expect(await status(clips.waiting, accounts.bob.api_key)).toBe('generating');
    expect(await status(clips.rendering)).toBe('generating');
    await clock.advance(2_000);
    expect(await status(clips.rendering)).toBe('done');
    expect(await status(clips.waiting, accounts.bob.api_key)).toBe('generating');
    await clock.advance(1_000);
    expect(await status(clips.waiting, accounts.bob.api_key)).toBe('done');
    expect((await client.get(`/v1/videos/${clips.stopped}`, { key: accounts.bob.api_key })).body).toMatchObject({ status: 'cancelled', error_code: 'cancelled' });
    // Another account's clip is a 404.
    expect((await client.get(`/v1/videos/${clips.waiting}`, { key: alice })).status).toBe(404);

    expect((await client.get(`/v1/images/${images.poster}`, { key: alice })).body).toMatchObject({ status: 'done' });
    expect((await client.get(`/v1/images/${images.half}`, { key: alice })).body).toMatchObject({ status: 'partial' });
    expect((await client.get(`/v1/images/${images.refused}`, { key: accounts.bob.api_key })).body).toMatchObject({ status: 'failed', error_code: 'prompt_blocked' });
  });

  it('refuses a bad fixture with a JSON Pointer and makes nothing', async () => {
    const before = (await client.get('/test_helpers/accounts', { key: ADMIN })).body.data.length;
    const refused = await client.post('/test_helpers/seed', { accounts: [{ name: 'carol' }], clips: [{ name: 'a', account: 'carol', status: 'done' }, { name: 'b', account: 'nobody', status: 'done' }] }, { key: ADMIN });
    expect(refused).toMatchObject({ status: 400, body: { code: 'invalid_parameter', pointer: '/clips/1/account' } });
    const tooLong = await client.post('/test_helpers/seed', { clips: [{ name: 'a', account: 'default', status: 'done', duration: 31 }] }, { key: ADMIN });
    expect(tooLong).toMatchObject({ status: 400, body: { code: 'invalid_duration', pointer: '/clips/0/duration' } });
    expect((await client.get('/test_helpers/accounts', { key: ADMIN })).body.data.length).toBe(before);
  });

  it('renders each kind of picture once per seed and gives every image its own working file (issue 29 item 6)', async () => {
    const render = vi.spyOn(SharpRenderer.prototype, 'render');
    try {
      const posters = Array.from({ length: 6 }, (_, i) => ({ name: `poster${i}`, account: 'shop', status: 'done', count: 4 }));
      const faces = Array.from({ length: 2 }, (_, i) => ({ name: `face${i}`, account: 'shop', status: 'done', type: 'character' }));
      const seeded = await client.post('/test_helpers/seed', { accounts: [{ name: 'shop' }], images: [...posters, ...faces, { name: 'wide', account: 'shop', status: 'done', aspect_ratio: '16:9', quality: 'hd' }] }, { key: ADMIN });
      expect(seeded.status).toBe(201);
      // One scene per ratio and quality, and a character's four poses: 6 renders, not 6 × 4 + 2 × 4 + 1 = 33.
      expect(render).toHaveBeenCalledTimes(6);
      const key = seeded.body.accounts.shop.api_key;
      const jobs = await Promise.all(Object.values(seeded.body.images as Record<string, number>).map(async (id) => (await client.get(`/v1/images/${id}`, { key })).body));
      const urls = jobs.flatMap((job: { images: { url: string; thumbnail_url: string }[] }) => job.images.flatMap((image) => [image.url, image.thumbnail_url]));
      expect(urls).toHaveLength(2 * (6 * 4 + 2 * 4 + 1));
      expect(new Set(urls).size).toBe(urls.length);
      const fetchFile = async (url: string) => (await fetch(`${client.origin}${new URL(url).pathname}`)).status;
      // Deleting one job's images leaves the others' files, made of the same picture, answering.
      expect((await client.delete(`/v1/images/${seeded.body.images.poster0}`, { key })).status).toBe(200);
      for (const url of urls.slice(8)) expect(await fetchFile(url)).toBe(200);
      for (const url of urls.slice(0, 8)) expect(await fetchFile(url)).toBe(404);
    } finally {
      render.mockRestore();
    }
  }, 60_000);

  it('answers every name, `__proto__`, `constructor` and `prototype` included, over HTTP and in process (issue 29 item 7)', async () => {
    const NAMES = ['__proto__', 'constructor', 'prototype'];
    const fixture = {
      accounts: NAMES.map((name) => ({ name })),
      assets: NAMES.map((name) => ({ name, account: name })),
      clips: NAMES.map((name) => ({ name, account: name, status: 'done' as const })),
      images: NAMES.map((name) => ({ name, account: name, status: 'failed' as const, error_code: 'prompt_blocked' as const })),
    };
    const seeded = await client.post('/test_helpers/seed', fixture, { key: ADMIN });
    expect(seeded.status).toBe(201);
    const check = (answer: Record<string, Record<string, unknown>>) => {
      for (const kind of ['accounts', 'assets', 'clips', 'images']) expect(Object.keys(answer[kind]!)).toEqual(NAMES);
    };
    check(seeded.body);
    // Each name's key is shown, and it is that account's.
    for (const name of NAMES) {
      const { id, api_key } = Object.getOwnPropertyDescriptor(seeded.body.accounts, name)!.value as { id: number; api_key: string };
      expect((await client.get('/v1/account', { key: api_key })).body).toMatchObject({ id });
      const clip = Object.getOwnPropertyDescriptor(seeded.body.clips, name)!.value as number;
      expect((await client.get(`/v1/videos/${clip}`, { key: api_key })).body).toMatchObject({ status: 'done' });
    }
    const handle = await startService({ seed: fixture, warn: () => undefined });
    try {
      check(handle.seeded as never);
      expect(JSON.parse(JSON.stringify(handle.seeded)).accounts.__proto__).toMatchObject({ api_key: expect.stringMatching(/^sk_/) });
      check((await handle.seed(fixture)) as never);
    } finally {
      await handle.close();
    }
  });

  it('takes the admin token only', async () => {
    expect(await client.post('/test_helpers/seed', {}, { key: service.first().apiKey })).toMatchObject({ status: 401 });
  });
});

describe('seed under --strict (issue 29 item 10)', () => {
  it('refuses a clip whose callback_url is loopback or plain http as /v1 does, with a pointer, and makes nothing', async () => {
    const strict = await Service.open({ file: false, strict: true, adminToken: ADMIN, warn: () => undefined });
    const http = await serviceClient(strict);
    try {
      for (const url of ['http://127.0.0.1:3000/hooks', 'https://127.0.0.1/hooks', 'https://[::1]/hooks', 'http://example.com/hooks']) {
        const v1 = await http.post('/v1/videos', { prompt: 'a fox', callback_url: url });
        expect(v1).toMatchObject({ status: 400, body: { code: 'invalid_callback_url' } });
        const seeded = await http.post('/test_helpers/seed', { accounts: [{ name: 'shop' }], clips: [{ name: 'later', account: 'shop', status: 'pending', callback_url: url }] }, { key: ADMIN });
        expect(seeded).toMatchObject({ status: 400, body: { code: 'invalid_callback_url', pointer: '/clips/0/callback_url', detail: v1.body.detail } });
      }
      expect((await http.get('/test_helpers/accounts', { key: ADMIN })).body.data).toHaveLength(1);
      // A host name passes both (its addresses are checked when the webhook connects).
      expect((await http.post('/v1/videos', { prompt: 'a fox', callback_url: 'https://localhost/hooks' })).status).toBe(202);
      expect((await http.post('/test_helpers/seed', { clips: [{ name: 'named', account: 'default', status: 'pending', callback_url: 'https://localhost/hooks' }] }, { key: ADMIN })).status).toBe(201);
      expect((await http.post('/test_helpers/seed', { clips: [{ name: 'later', account: 'default', status: 'pending', callback_url: 'https://example.com/hooks' }] }, { key: ADMIN })).status).toBe(201);
      await expect(startService({ strict: true, seed: { clips: [{ name: 'x', account: 'default', status: 'pending', callback_url: 'http://127.0.0.1:9/x' }] }, warn: () => undefined })).rejects.toMatchObject({ code: 'invalid_callback_url', extra: expect.objectContaining({ pointer: '/clips/0/callback_url' }) });
    } finally {
      await http.close();
      await strict.close();
    }
  });
});

describe('startService({ seed }) (issue 22)', () => {
  let started: StartedService;
  afterAll(async () => started?.close());

  it('starts with the fixture made, and makes it again at reset', async () => {
    started = await startService({ seed: { accounts: [{ name: 'alice' }], clips: [{ name: 'one', account: 'alice', status: 'done' }] }, warn: () => undefined });
    expect(started.seeded).toMatchObject({ accounts: { alice: { id: 2 } }, clips: { one: 1 } });
    const key = started.seeded!.accounts.alice!.api_key;
    const get = () => fetch(`${started.url}/videos/1`, { headers: { authorization: `Bearer ${key}` } });
    expect((await (await get()).json()) as object).toMatchObject({ status: 'done' });
    await fetch(`${started.origin}/test_helpers/reset`, { method: 'POST', headers: { authorization: `Bearer ${started.adminToken}` } });
    const again = started.seeded!.accounts.alice!.api_key;
    const res = await fetch(`${started.url}/videos/1`, { headers: { authorization: `Bearer ${again}` } });
    expect(res.status).toBe(200);
  });

  it('rejects a bad fixture before it listens', async () => {
    await expect(startService({ seed: { clips: [{ name: 'x', account: 'ghost', status: 'done' }] } as never, warn: () => undefined })).rejects.toMatchObject({ code: 'invalid_parameter', extra: expect.objectContaining({ pointer: '/clips/0/account' }) });
  });
});
