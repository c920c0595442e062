// Issue 30 item 2: reconcile's rules on a list the test controls (GET /videos served by a fake fetch):
// which clips it takes, how far it pages, the cursor (memory, file, Redis), failures, the timer, options.
import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createReceiver, FileDeliveryStore, MemoryDeliveryStore, RedisDeliveryStore, ReconcileError, type DeliveryStore, type WebhookEvent } from '../../src/index.js';
import { createReceiver as createWebReceiver } from '../../src/web.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { SECRET, tempDir } from '../helpers/webhooks.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const redis = redisAvailable() ? await startRedis() : null;
afterAll(async () => {
  await redis?.stop();
});

/** A clip as GET /videos shows it (spec 2.1), created and ended at the given times. */
function clip(id: number, createdAt: number, completedAt: number | null, status: 'done' | 'error' = 'done') {
  const done = status === 'done';
  return {
    id, status, prompt: `clip ${id}`, video_url: done ? `https://svc.test/v1/media/${id}.mp4?exp=1&sig=${Math.random()}` : null, poster_url: null, share_page_url: null,
    credits_used: done ? 9 : 0, refunded: !done, model: 'standard', duration: 5, ratio: '16:9', progress: null,
    error: done ? null : 'The generation service is busy right now.', error_code: done ? null : 'upstream_busy',
    created_at: iso(createdAt), completed_at: completedAt === null ? null : iso(completedAt), poll_url: `https://svc.test/v1/videos/${id}`,
  };
}

/** GET /videos over `clips` (newest id first, spec 4.3), recording each request's query. */
function fakeService(clips: ReturnType<typeof clip>[]) {
  const requests: string[] = [];
  const fetch = vi.fn(async (input: string | URL | Request) => {
    const url = new URL(String(input));
    requests.push(url.search);
    const status = url.searchParams.get('status');
    const limit = Number(url.searchParams.get('limit'));
    const offset = Number(url.searchParams.get('offset'));
    const mine = clips.filter((c) => c.status === status).sort((a, b) => b.id - a.id);
    return Response.json({ data: mine.slice(offset, offset + limit), total: mine.length, limit, offset });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, requests };
}

function receiverWith(store: DeliveryStore = new MemoryDeliveryStore({ clock: () => NOW }), now = () => NOW) {
  const receiver = createReceiver({ secret: SECRET, store, clock: now });
  const seen: WebhookEvent[] = [];
  receiver.onAny((event) => void seen.push(event));
  return { receiver, seen };
}

const base = { apiKey: 'sk_test', baseUrl: 'https://svc.test/v1' };

describe('receiver.reconcile on a list', () => {
  it('takes the clips that ended at or after since, also ones created long before it, oldest end first; pages until a clip created maxGenerationMs before since', async () => {
    const since = NOW - 60 * MIN;
    const clips = [
      clip(1, since - 300 * MIN, since - 290 * MIN), // long before: its page is not needed
      ...Array.from({ length: 150 }, (_, i) => clip(2 + i, since - 100 * MIN + i * 1000, since - 99 * MIN)), // ended before since
      clip(200, since - 20 * MIN, since + 5 * MIN), // created before since, ended after: taken
      clip(201, since + 1 * MIN, since + 2 * MIN, 'error'),
      clip(202, since + 3 * MIN, since + 3 * MIN), // ends exactly… later than 201
    ];
    const { fetch, requests } = fakeService(clips);
    const { receiver, seen } = receiverWith();
    const result = await receiver.reconcile({ ...base, since, fetch });
    expect(result).toEqual({ checked: 3, handled: 3, duplicates: 0, failed: 0, malformed: [], since: iso(since), cursor: iso(NOW - MIN) });
    expect(seen.map((e) => [e.id, e.event])).toEqual([[201, 'video.failed'], [202, 'video.completed'], [200, 'video.completed']]);
    // done: offset 0 holds 200-202 and 53 clips of 2-151; the first clip created 30 min before since ends the paging.
    expect(requests).toEqual(['?status=done&limit=100&offset=0', '?status=error&limit=100&offset=0']);
    expect(vi.mocked(fetch).mock.calls[0]![1]).toMatchObject({ headers: { authorization: 'Bearer sk_test' } });
  });

  it('a handler that throws: counted failed, the cursor stays at that clip, and the next run (no since) hands it over once fixed', async () => {
    const since = NOW - 60 * MIN;
    const { fetch } = fakeService([clip(1, since, since + 1 * MIN), clip(2, since, since + 2 * MIN), clip(3, since, since + 3 * MIN)]);
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore({ clock: () => NOW }), clock: () => NOW });
    let broken = true;
    const ran: number[] = [];
    const errors: string[] = [];
    receiver.onAny((event) => {
      if (broken && event.id === 2) throw new Error('database down');
      ran.push(event.id);
    });
    receiver.onError((error, context) => void errors.push(`${error.code} ${context.deliveryId}`));
    expect(await receiver.reconcile({ ...base, since, fetch })).toMatchObject({ checked: 3, handled: 2, failed: 1, cursor: iso(since + 2 * MIN) });
    expect(errors).toEqual(['handler_failed reconcile:video.completed:2']);
    broken = false;
    expect(await receiver.reconcile({ ...base, fetch })).toMatchObject({ since: iso(since + 2 * MIN), checked: 2, handled: 1, duplicates: 1, failed: 0, cursor: iso(NOW - MIN) });
    expect(ran).toEqual([1, 3, 2]);
  });

  it('a list item that makes no valid event: reported once to onError and in the result, skipped, and the cursor moves past it', async () => {
    const since = NOW - 60 * MIN;
    const broken = { ...clip(2, since, since + 2 * MIN), credits_used: 'lots' };
    const noId = { ...clip(4, since, since + 4 * MIN), id: 'four' };
    const { fetch } = fakeService([clip(1, since, since + MIN), broken, clip(3, since, since + 3 * MIN), noId] as ReturnType<typeof clip>[]);
    const { receiver, seen } = receiverWith();
    const errors: Array<[string, unknown, unknown]> = [];
    receiver.onError((error, context) => void errors.push([error.code, context.deliveryId, context.source]));
    const malformed = [
      { id: 2, field: 'credits_used', message: expect.stringContaining('`credits_used` must be a non-negative integer') },
      { id: null, field: 'id', message: expect.stringContaining('id') },
    ];
    const first = await receiver.reconcile({ ...base, since, fetch });
    expect(first).toEqual({ checked: 4, handled: 2, duplicates: 0, failed: 0, malformed, since: iso(since), cursor: iso(NOW - MIN) });
    expect(seen.map((event) => event.id)).toEqual([1, 3]);
    expect(errors).toEqual([['invalid_payload', 'reconcile:video.completed:2', 'reconcile'], ['invalid_payload', undefined, 'reconcile']]);
    // Seen again from an explicit since: in the result again, but told to onError once.
    expect(await receiver.reconcile({ ...base, since, fetch })).toMatchObject({ checked: 4, duplicates: 2, failed: 0, malformed });
    expect(errors).toHaveLength(2);
    // The cursor is past it: the next run from the cursor does not see it.
    expect(await receiver.reconcile({ ...base, fetch })).toMatchObject({ since: iso(NOW - MIN), checked: 0, malformed: [] });
  });

  it('an event being handled by a webhook right now is not run twice: failed for this run, a duplicate for the next', async () => {
    const since = NOW - 60 * MIN;
    const { fetch } = fakeService([clip(5, since, since + MIN)]);
    const store = new MemoryDeliveryStore({ clock: () => NOW });
    const { receiver, seen } = receiverWith(store);
    expect(store.claim(['d:dlv_5', 'e:video.completed:5'], 60_000, 'webhook')).toBe('claimed');
    expect(await receiver.reconcile({ ...base, since, fetch })).toMatchObject({ handled: 0, failed: 1, cursor: iso(since + MIN) });
    await store.complete(['d:dlv_5', 'e:video.completed:5']);
    expect(await receiver.reconcile({ ...base, fetch })).toMatchObject({ duplicates: 1, failed: 0 });
    expect(seen).toEqual([]);
  });

  it('ingest: handled, then duplicate; a webhook of the same event afterwards is a duplicate', async () => {
    const { receiver, seen } = receiverWith();
    const { fetch } = fakeService([clip(9, NOW - 10 * MIN, NOW - 9 * MIN)]);
    await receiver.reconcile({ ...base, since: NOW - 10 * MIN, fetch });
    const event = seen[0]!;
    expect(await receiver.ingest(event, { source: 'reconcile' })).toBe('duplicate');
    await expect(receiver.ingest(event, { source: 'webhook' as never })).rejects.toThrow(TypeError);
    expect(seen).toHaveLength(1);
  });

  it('keeps its cursor in a file beside the deliveries file: a restarted receiver starts there', async () => {
    const tmp = await tempDir();
    try {
      const file = tmp.file('deliveries.json');
      const { fetch, requests } = fakeService([clip(1, NOW - 30 * MIN, NOW - 20 * MIN)]);
      const first = receiverWith(new FileDeliveryStore({ file, clock: () => NOW }));
      await first.receiver.reconcile({ ...base, since: NOW - 60 * MIN, fetch });
      await first.receiver.close();
      expect(JSON.parse(await readFile(`${file}.reconcile.json`, 'utf8'))).toEqual({ version: 1, cursor: iso(NOW - MIN) });
      const later = NOW + 60 * MIN;
      const second = receiverWith(new FileDeliveryStore({ file, clock: () => later }), () => later);
      expect(await second.receiver.reconcile({ ...base, fetch })).toMatchObject({ since: iso(NOW - MIN), checked: 0, cursor: iso(later - MIN) });
      expect(requests).toHaveLength(4);
      await second.receiver.close();
      // A torn cursor file counts as none (a warning says so): the run starts 24 h back and finds duplicates.
      await writeFile(`${file}.reconcile.json`, '{"version":1,"cur');
      const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
      const third = receiverWith(new FileDeliveryStore({ file, clock: () => later }), () => later);
      expect(await third.receiver.reconcile({ ...base, fetch })).toMatchObject({ since: iso(later - 24 * 60 * MIN), checked: 1, duplicates: 1 });
      expect(warned).toHaveBeenCalledWith(expect.stringContaining('not a cliphook reconcile cursor'), expect.objectContaining({ code: 'CLIPHOOK_CURSOR_IGNORED' }));
      warned.mockRestore();
      await third.receiver.close();
    } finally {
      await tmp.cleanup();
    }
  });

  it.runIf(redis)('keeps its cursor in Redis for the Redis store, shared by every receiver on it, and only moves it forward', async () => {
    const store = new RedisDeliveryStore({ url: redis!.url, prefix: `t${Date.now()}:` });
    const { fetch } = fakeService([clip(1, NOW - 30 * MIN, NOW - 20 * MIN)]);
    const one = receiverWith(store);
    await one.receiver.reconcile({ ...base, since: NOW - 60 * MIN, fetch });
    expect(await store.readMark('reconcile')).toBe(NOW - MIN);
    const other = receiverWith(store);
    expect(await other.receiver.reconcile({ ...base, fetch })).toMatchObject({ since: iso(NOW - MIN) });
    await store.raiseMark('reconcile', NOW - 90 * MIN);
    expect(await store.readMark('reconcile')).toBe(NOW - MIN);
    await store.close();
  });

  it('the web receiver reconciles too, with the cursor in memory', async () => {
    const receiver = createWebReceiver({ secret: SECRET, clock: () => NOW });
    const ids: number[] = [];
    receiver.onAny((event) => void ids.push(event.id));
    const { fetch } = fakeService([clip(3, NOW - 30 * MIN, NOW - 20 * MIN, 'error')]);
    expect(await receiver.reconcile({ ...base, since: NOW - 60 * MIN, fetch })).toMatchObject({ handled: 1 });
    expect(await receiver.reconcile({ ...base, fetch })).toMatchObject({ since: iso(NOW - MIN), checked: 0 });
    expect(ids).toEqual([3]);
  });

  it('on a timer: a run at start and one every `every` after, stopped by close()', async () => {
    let now = NOW;
    const timers: Array<{ at: number; callback: () => void } | null> = [];
    const fake = { setTimeout: (callback: () => void, ms: number) => timers.push({ at: now + ms, callback }) - 1, clearTimeout: (handle: unknown) => void (timers[handle as number] = null) };
    const fire = async () => {
      const due = timers.findIndex((t) => t !== null && t.at <= now);
      if (due < 0) return false;
      const timer = timers[due]!;
      timers[due] = null;
      timer.callback();
      // The run has ended once the next one is armed (its own deadlines come and go on the same timers).
      await vi.waitFor(() => expect(timers.filter((t) => t !== null).map((t) => t.at)).toEqual([now + 15 * MIN]));
      return true;
    };
    const { fetch, requests } = fakeService([]);
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), clock: () => now, reconcile: { ...base, fetch, every: 15 * MIN, runTimeout: 10 * MIN, timers: fake } });
    expect(await fire()).toBe(true);
    expect(requests).toHaveLength(2);
    expect(await fire()).toBe(false); // the next is 15 minutes away
    now += 15 * MIN;
    expect(await fire()).toBe(true);
    expect(requests).toHaveLength(4);
    await receiver.close();
    expect(timers.every((t) => t === null)).toBe(true);
  });

  it('a scheduled run that fails goes to reconcile.onError, and the schedule goes on', async () => {
    const failures: string[] = [];
    let callback: (() => void) | null = null;
    const delays: number[] = [];
    const timers = { setTimeout: (fn: () => void, ms: number) => ((callback = fn), delays.push(ms)), clearTimeout: () => undefined };
    const fetch = (async () => Response.json({ code: 'invalid_api_key' }, { status: 401 })) as unknown as typeof globalThis.fetch;
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), reconcile: { ...base, fetch, every: MIN, timers, onError: (error) => void failures.push((error as ReconcileError).code) } });
    callback!();
    await vi.waitFor(() => expect(failures).toEqual(['service_error']));
    // The tick at once, the run's deadline (15 min), its one GET's (30 s), then the next tick.
    await vi.waitFor(() => expect(delays).toEqual([0, 15 * MIN, 30_000, MIN]));
    await receiver.close();
  });

  it('refuses bad options with a TypeError naming the option, at construction for the timer', () => {
    const { receiver } = receiverWith();
    expect(() => receiver.reconcile({ ...base, apiKey: '' })).toThrow(/`apiKey`/);
    expect(() => receiver.reconcile({ ...base, baseUrl: 'ftp://x/v1' })).toThrow(/`baseUrl`/);
    expect(() => receiver.reconcile({ ...base, since: 'yesterday' })).toThrow(/`since`/);
    expect(() => receiver.reconcile({ ...base, maxWaits: -1 })).toThrow(/`maxWaits`/);
    expect(() => receiver.reconcile({ ...base, maxPages: 0 })).toThrow(/`maxPages`/);
    expect(() => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), reconcile: { ...base, every: 1000 } })).toThrow(/`reconcile.every`/);
  });

  it('refuses a bad schedule before it opens the inbox: no lock or file is left held by the receiver that threw', async () => {
    const tmp = await tempDir();
    try {
      const inbox = { file: tmp.file('inbox.json') };
      expect(() => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox, reconcile: { ...base, baseUrl: 'http://api.example.com/v1', every: MIN } })).toThrow(/`baseUrl`/);
      const next = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox });
      expect(await next.inbox!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 0 });
      await next.close();
    } finally {
      await tmp.cleanup();
    }
  });

  it('refuses a plain-http baseUrl off loopback (the API key and the unsigned items would travel in clear); https anywhere and http on loopback pass', async () => {
    const { receiver } = receiverWith();
    for (const baseUrl of ['http://api.example.com/v1', 'http://10.1.2.3/v1', 'http://192.168.1.5:8080/v1', 'http://[fd00::1]/v1']) {
      expect(() => receiver.reconcile({ ...base, baseUrl })).toThrow(TypeError);
      expect(() => receiver.reconcile({ ...base, baseUrl })).toThrow(/`baseUrl`.*https/);
    }
    expect(() => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), reconcile: { ...base, baseUrl: 'http://api.example.com/v1', every: MIN } })).toThrow(/`baseUrl`/);
    const { fetch } = fakeService([]);
    for (const baseUrl of ['https://api.example.com/v1', 'https://10.1.2.3/v1', 'http://127.0.0.1:4010/v1', 'http://localhost:4010/v1', 'http://[::1]:4010/v1', 'http://api.localhost/v1']) {
      await expect(receiver.reconcile({ ...base, baseUrl, fetch })).resolves.toMatchObject({ checked: 0 });
    }
  });

  it('gives up with too_many_clips past maxPages, before handling anything, and invalid_response on a body that is not a VideoList', async () => {
    const since = NOW - 60 * MIN;
    const { fetch } = fakeService(Array.from({ length: 250 }, (_, i) => clip(i + 1, since + i, since + MIN)));
    const { receiver, seen } = receiverWith();
    await expect(receiver.reconcile({ ...base, since, fetch, maxPages: 2 })).rejects.toMatchObject({ code: 'too_many_clips' });
    expect(seen).toEqual([]);
    const html = (async () => new Response('<html>', { status: 200 })) as unknown as typeof globalThis.fetch;
    await expect(receiver.reconcile({ ...base, since, fetch: html })).rejects.toMatchObject({ code: 'invalid_response' });
    const down = (async () => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 203.0.113.9:443'), { code: 'ECONNREFUSED' }) });
    }) as unknown as typeof globalThis.fetch;
    const unreachable = await receiver.reconcile({ ...base, since, fetch: down }).catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(ReconcileError);
    expect(unreachable).toMatchObject({ code: 'unreachable', message: expect.stringMatching(/^Could not reach svc\.test .*ECONNREFUSED 203\.0\.113\.9:443/) });
    const nothing = (async () => Response.json({ code: 'not_found', detail: 'Nothing at /videos' }, { status: 404 })) as unknown as typeof globalThis.fetch;
    const notFound = await receiver.reconcile({ ...base, baseUrl: 'https://svc.test', since, fetch: nothing }).catch((e: unknown) => e);
    expect(notFound).toMatchObject({ code: 'service_error', status: 404, message: expect.stringContaining('`baseUrl` must be the service\'s base URL ending in /v1') });
  });
});
