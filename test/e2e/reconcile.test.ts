// Issue 30 item 2 and 3, against the simulated service: a receiver down for 4 hours of service time (every
// webhook attempt failed) gets every clip back from `reconcile()`, each handled exactly once; a second run
// handles nothing; a webhook redelivered afterwards is a duplicate; the same with webhook chaos on; paging
// across more than 100 clips; 429 then success.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createReceiver, MemoryDeliveryStore, ReconcileError, type WebhookContext, type WebhookEvent } from 'cliphook';
import { startService, type StartedService } from 'cliphook/service';

const HOUR = 3_600_000;
let svc: StartedService;

beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc.close();
});

/** An account of the test's own, and a receiver on its time behind a server that can be down (500) or closed. */
async function setup({ balance = 5_000 } = {}) {
  const account = await svc.accounts.create({ balance });
  const clock = () => svc.clock.nowOf(account.id);
  const receiver = createReceiver({ secret: account.webhook_secret, clock, store: new MemoryDeliveryStore({ clock }) });
  const handled: Array<{ event: WebhookEvent; context: WebhookContext }> = [];
  receiver.onAny((event, context) => void handled.push({ event, context }));
  const state = { down: true, hits: 0 };
  const middleware = receiver.express();
  const server: Server = createServer((req, res) => {
    state.hits++;
    if (state.down) return void res.writeHead(500).end();
    middleware(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  const headers = { authorization: `Bearer ${account.api_key}`, 'content-type': 'application/json' };
  const create = async (prompt: string) => {
    const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers, body: JSON.stringify({ prompt, callback_url: url }) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: number }).id;
  };
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { account, clock, receiver, handled, state, url, headers, create, close };
}

/** The deliveries of these clips, by clip id. */
function deliveriesOf(ids: number[]) {
  return svc.emitter.list({ limit: 1000 }).filter((delivery) => ids.includes(delivery.payload.id as number));
}

// A scheduled run is real HTTP to the service: on a loaded 2-core machine it can take longer than waitFor's 1 s default.
const SETTLE = { timeout: 15_000, interval: 10 };

describe('reconcile after an outage', () => {
  it('the receiver down for 4 h (every attempt got 500): reconcile hands each clip over once, a second run handles nothing, a late webhook is a duplicate', async () => {
    const app = await setup();
    const start = app.clock();
    const done = [await app.create('a red fox'), await app.create('a lighthouse'), await app.create('a cat')];
    const failed = [await app.create('x simulate:upstream_busy'), await app.create('y simulate:content_rejected')];
    await svc.clock.advance(4 * HOUR, { account: app.account.id });
    // The service gave up: six attempts each, all 500.
    const deliveries = deliveriesOf([...done, ...failed]);
    expect(deliveries).toHaveLength(5);
    for (const delivery of deliveries) expect({ state: delivery.state, statuses: delivery.attempts.map((a) => a.status) }).toEqual({ state: 'failed', statuses: [500, 500, 500, 500, 500, 500] });
    expect(app.handled).toEqual([]);

    app.state.down = false;
    const result = await app.receiver.reconcile({ apiKey: app.account.api_key, baseUrl: svc.url, since: new Date(start) });
    expect(result).toMatchObject({ checked: 5, handled: 5, duplicates: 0, failed: 0, since: new Date(start).toISOString() });
    expect(app.handled.map(({ event }) => event.id).sort()).toEqual([...done, ...failed].sort());
    for (const { event, context } of app.handled) {
      // Every field of spec 2.12 from the clip, as GET /videos/{id} shows it (video_url is signed anew on every read).
      const clip = (await (await fetch(`${svc.url}/videos/${event.id}`, { headers: app.headers })).json()) as Record<string, unknown>;
      const { video_url, delivered_at, event: name, ...rest } = event;
      expect(rest).toEqual({ id: clip.id, status: clip.status, prompt: clip.prompt, error: clip.error, error_code: clip.error_code, credits_used: clip.credits_used, duration: clip.duration, model: clip.model, created_at: clip.created_at, completed_at: clip.completed_at });
      expect(name).toBe(clip.status === 'done' ? 'video.completed' : 'video.failed');
      if (clip.status === 'done') expect(video_url).toMatch(new RegExp(`^${svc.origin}/v1/media/${event.id}\\.mp4\\?`));
      else expect(video_url).toBeNull();
      expect(delivered_at).toBe(new Date(Date.parse(delivered_at)).toISOString());
      expect(context).toMatchObject({ deliveryId: `reconcile:${name}:${event.id}`, source: 'reconcile', attempt: 1 });
      expect(JSON.parse(new TextDecoder().decode(context.rawBody))).toEqual(event);
    }
    expect(app.handled.filter(({ event }) => event.event === 'video.failed').map(({ event }) => event.error_code).sort()).toEqual(['content_rejected', 'upstream_busy']);

    // A second run starts at the cursor: nothing new ended, nothing runs; from the start again, all are duplicates.
    expect(await app.receiver.reconcile({ apiKey: app.account.api_key, baseUrl: svc.url })).toMatchObject({ handled: 0, failed: 0 });
    expect(await app.receiver.reconcile({ apiKey: app.account.api_key, baseUrl: svc.url, since: start })).toMatchObject({ checked: 5, handled: 0, duplicates: 5, failed: 0 });

    // The service's webhook, redelivered after the reconciliation: a duplicate of the event, acknowledged.
    await svc.emitter.redeliver(deliveries[0]!.id);
    await expect.poll(() => svc.emitter.get(deliveries[0]!.id)?.state).toBe('delivered');
    expect(svc.emitter.get(deliveries[0]!.id)?.attempts.at(-1)?.response).toBe('{"received":true,"duplicate":true}');
    expect(app.handled).toHaveLength(5);
    await app.close();
  });

  it('the same with webhook chaos (duplicate, concurrent, late) while the receiver is closed, then back up', async () => {
    const app = await setup();
    await svc.webhookChaos({ account: app.account.id, modes: ['webhook_duplicate', 'webhook_concurrent', 'webhook_late'] });
    await app.close(); // down: connection refused
    const start = app.clock();
    const ids = [await app.create('a fox'), await app.create('a boat'), await app.create('z simulate:upstream_error')];
    await svc.clock.advance(4 * HOUR, { account: app.account.id });
    expect(deliveriesOf(ids).map((delivery) => delivery.state)).toEqual(['failed', 'failed', 'failed']);

    // Back up at the same address, reconciliation first, then every webhook redelivered (chaos still on).
    app.state.down = false;
    const server = createServer(app.receiver.express());
    await new Promise<void>((resolve) => server.listen(Number(new URL(app.url).port), '127.0.0.1', resolve));
    const result = await app.receiver.reconcile({ apiKey: app.account.api_key, baseUrl: svc.url, since: start });
    expect(result).toMatchObject({ checked: 3, handled: 3, duplicates: 0, failed: 0 });
    expect(app.handled.map(({ event }) => event.id).sort()).toEqual([...ids].sort());
    for (const delivery of deliveriesOf(ids)) {
      await svc.emitter.redeliver(delivery.id);
      await expect.poll(() => svc.emitter.get(delivery.id)?.state).toBe('delivered');
      expect(svc.emitter.get(delivery.id)?.attempts.at(-1)?.response).toContain('"duplicate":true');
    }
    // The copies chaos sends (a duplicate, a concurrent one, one 10 minutes late) ran nothing either.
    await svc.clock.advance(60_000, { account: app.account.id });
    expect(app.handled).toHaveLength(3);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.receiver.close();
  });

  it('pages across more than 100 clips, each once, though clips that end between two reads push the pages down; the next run gets those', async () => {
    const app = await setup();
    const start = app.clock();
    const seeded = await svc.seed({
      accounts: [{ name: 'big', balance: 50_000 }],
      clips: Array.from({ length: 230 }, (_, i) => ({ name: `c${i}`, account: 'big', status: i % 10 === 0 ? ('error' as const) : ('done' as const), ...(i % 10 === 0 ? { error_code: 'upstream_busy' } : {}), prompt: `clip ${i}` })),
    });
    const big = seeded.accounts.big!;
    const clock = () => svc.clock.nowOf(big.id);
    const receiver = createReceiver({ secret: big.webhook_secret, clock, store: new MemoryDeliveryStore({ clock }) });
    const seen: number[] = [];
    receiver.onAny((event) => void seen.push(event.id));
    const pushed: number[] = [];
    // Before every page but the first, a new clip ends: it goes on top, and every later item one further down.
    const pushing: typeof fetch = async (input, init) => {
      if (String(input).includes('status=done') && !String(input).includes('offset=0&') && !String(input).endsWith('offset=0')) {
        const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${big.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: `late ${pushed.length}` }) });
        pushed.push(((await res.json()) as { id: number }).id);
        await svc.clock.advance(15_000, { account: big.id });
      }
      return fetch(input, init);
    };
    const result = await receiver.reconcile({ apiKey: big.api_key, baseUrl: svc.url, since: start - 1000, fetch: pushing });
    expect(pushed.length).toBe(2); // done: 207 clips, pages at offsets 0, 90, 180
    expect(result).toMatchObject({ checked: 230, handled: 230, duplicates: 0, failed: 0 });
    expect(seen.length).toBe(230);
    expect([...seen].sort((a, b) => a - b)).toEqual(Object.values(seeded.clips).sort((a, b) => a - b));
    // The clips that ended during the listing were above the pages read: the cursor stayed before the listing.
    expect(Date.parse(result.cursor)).toBeLessThan(Date.parse((await (await fetch(`${svc.url}/videos/${pushed[0]}`, { headers: { authorization: `Bearer ${big.api_key}` } })).json() as { completed_at: string }).completed_at));
    const next = await receiver.reconcile({ apiKey: big.api_key, baseUrl: svc.url });
    expect(next).toMatchObject({ handled: 2, failed: 0 });
    expect(seen.slice(230).sort()).toEqual([...pushed].sort());
    await receiver.close();
  });

  it('on a timer on the service clock: while the webhook endpoint is down, the scheduled runs hand each clip over once; close() stops them', async () => {
    const app = await setup();
    const clock = () => svc.clock.nowOf(app.account.id);
    // The next run is armed once a run has ended (its cursor written), after its GETs are answered: the
    // clock moves only once it is armed, else an advance could pass before the timer exists.
    let armed = 0;
    const timers = {
      // The runs' deadlines are timed here too: only the schedule's own timer counts as armed.
      setTimeout: (callback: () => void, ms: number) => ((ms === 0 || ms === 15 * 60_000) && armed++, svc.clock.setTimeout(callback, ms)),
      clearTimeout: (handle: unknown) => svc.clock.clearTimeout(handle),
    };
    const receiver = createReceiver({
      secret: app.account.webhook_secret,
      clock,
      store: new MemoryDeliveryStore({ clock }),
      reconcile: { apiKey: app.account.api_key, baseUrl: svc.url, every: 15 * 60_000, runTimeout: 30 * 60_000, timers },
    });
    const ids: number[] = [];
    receiver.onAny((event) => void ids.push(event.id));
    // Each run is two GETs (one page of done, one of error): the journal says when one has ended.
    const lists = async () => (await svc.requests.list({ operation: 'listVideos', account: app.account.id, limit: 100 })).data.length;
    await vi.waitFor(async () => expect(await lists()).toBe(2), SETTLE); // the run at start
    const made = [await app.create('a fox'), await app.create('q simulate:upstream_error')];
    for (let run = 2; run <= 9; run++) {
      await vi.waitFor(() => expect(armed).toBe(run), SETTLE);
      await svc.clock.advance(15 * 60_000);
      await vi.waitFor(async () => expect(await lists()).toBe(2 * run), SETTLE);
    }
    await vi.waitFor(() => expect([...ids].sort()).toEqual([...made].sort()), SETTLE);
    expect(app.handled).toEqual([]); // the webhooks themselves all failed
    await receiver.close();
    await svc.clock.advance(60 * 60_000);
    expect(await lists()).toBe(18);
    await app.close();
  });

  it('waits out a 429 with its Retry-After (on the injected sleep), then succeeds; gives up after maxWaits', async () => {
    const app = await setup();
    const start = app.clock();
    await app.create('a fox');
    await svc.clock.advance(60_000, { account: app.account.id });
    await svc.faults.add({ match: { operation: 'listVideos', account: app.account.id }, times: 2, action: { problem: 'rate_limit_exceeded', retry_after: 7 } });
    const slept: number[] = [];
    const sleep = async (ms: number) => void slept.push(ms);
    app.state.down = false;
    expect(await app.receiver.reconcile({ apiKey: app.account.api_key, baseUrl: svc.url, since: start, sleep })).toMatchObject({ checked: 1, failed: 0 });
    expect(slept).toEqual([7_000, 7_000]);

    await svc.faults.add({ match: { operation: 'listVideos', account: app.account.id }, times: 3, action: { problem: 'upstream_busy' } });
    const error = await app.receiver.reconcile({ apiKey: app.account.api_key, baseUrl: svc.url, since: start, sleep, maxWaits: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReconcileError);
    expect(error).toMatchObject({ code: 'waits_exhausted', status: 503, serviceCode: 'upstream_busy' });
    const refused = await app.receiver.reconcile({ apiKey: 'sk_wrong', baseUrl: svc.url, since: start }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'service_error', status: 401, serviceCode: 'invalid_api_key' });
    await app.close();
  });
});
