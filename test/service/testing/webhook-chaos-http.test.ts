import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createReceiver, MemoryDeliveryStore } from '../../../src/receiver/index.js';
import type { Delivery } from '../../../src/emitter/index.js';
import { completedPayload } from '../../emitter/helpers.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { LATE_BACKDATE_MS } from '../../../src/service/testing/chaos.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22: webhook chaos end to end — the service delivers each mode's way over HTTP to cliphook's own
// receiver (on 127.0.0.1:0), and its handler runs exactly once per event.

const ADMIN = 'adm_chaos_admin_token_0123456789ab';
let clock: SimulatedClock;
let service: Service;
let client: ServiceClient;
let server: Server;
let origin: string;
let hookPath: string;
let receiverUrl: string;
let testNo = 0;

/** What reached the receiver: each request's delivery id, its body, and the receiver's answer. */
interface Arrival {
  delivery: string;
  clipId: number;
  deliveredAt: string;
  status: number;
  answer: string;
}
let arrivals: Arrival[];
/** The handler's runs, by clip id. */
let runs: Map<number, number>;
/** This test's account, and the receiver's secrets. */
let account: { id: number; api_key: string; webhook_secret: string };
let secrets: string[];
let tolerance: number | false;
/** The receiver's clock: the service's time, or an account's. */
let receiverClock: () => number;

beforeAll(async () => {
  clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-05-01T10:00:00Z') });
  service = await Service.open({ file: false, clock, adminToken: ADMIN, rateLimitPerMinute: 1e6, warn: () => undefined });
  client = await serviceClient(service);
  server = createServer((req, res) => {
    const receiver = createReceiver({ secret: secrets, tolerance, clock: receiverClock, store });
    receiver.on('video.completed', (event) => {
      const id = event.id;
      runs.set(id, (runs.get(id) ?? 0) + 1);
    });
    const chunks: Buffer[] = [];
    const end = res.end.bind(res);
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (chunk) chunks.push(Buffer.from(chunk as string));
      return end(chunk as never, ...(rest as []));
    }) as typeof res.end;
    // Read whole first, as express.raw() does: the receiver verifies the Buffer it finds on req.body.
    const body: Buffer[] = [];
    req.on('data', (part: Buffer) => body.push(part));
    req.on('end', () => {
      // Only this test's webhooks count: an earlier test's retries are still on the schedule.
      if (req.url !== hookPath) return void res.writeHead(410).end();
      const raw = Buffer.concat(body);
      res.on('finish', () => {
        const sent = JSON.parse(raw.toString('utf8')) as { id: number; delivered_at: string };
        arrivals.push({ delivery: String(req.headers['x-service-delivery']), clipId: sent.id, deliveredAt: sent.delivered_at, status: res.statusCode, answer: Buffer.concat(chunks).toString('utf8') });
      });
      Object.assign(req, { body: raw });
      receiver.express()(req, res, () => res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await client.close();
  await service.close();
  await new Promise((resolve) => server.close(resolve));
});

/** One delivery store for the whole test, as one receiver process keeps. */
let store: MemoryDeliveryStore;
beforeEach(async () => {
  arrivals = [];
  runs = new Map();
  hookPath = `/hooks/${++testNo}`;
  receiverUrl = `${origin}${hookPath}`;
  tolerance = 300;
  receiverClock = () => clock.now();
  store = new MemoryDeliveryStore({ clock: () => clock.now() });
  account = (await client.post('/test_helpers/accounts', { balance: 500 }, { key: ADMIN })).body;
  secrets = [account.webhook_secret];
});

async function clip(prompt: string): Promise<number> {
  const created = await client.post('/v1/videos', { prompt, callback_url: receiverUrl }, { key: account.api_key });
  expect(created.status).toBe(202);
  return created.body.id as number;
}

/** Moves the clock until every clip has ended and its first attempts are answered. */
const run = (ms = 10_000) => clock.advance(ms);

describe('webhook chaos over HTTP, against cliphook’s receiver (issue 22)', () => {
  it('without chaos: one request, handled once', async () => {
    const id = await clip('a fox');
    await run();
    expect(arrivals.map((a) => [a.clipId, a.status, a.answer])).toEqual([[id, 200, expect.any(String)]]);
    expect(runs.get(id)).toBe(1);
  });

  it('webhook_duplicate: the same delivery twice, the copy acknowledged as a duplicate', async () => {
    const id = await clip('a fox simulate:webhook_duplicate');
    await run();
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]!.delivery).toBe(arrivals[0]!.delivery);
    expect(arrivals[1]!.deliveredAt).toBe(arrivals[0]!.deliveredAt);
    expect(arrivals.map((a) => a.status)).toEqual([200, 200]);
    expect(JSON.parse(arrivals[1]!.answer)).toEqual({ received: true, duplicate: true });
    expect(runs.get(id)).toBe(1);
    await run(3 * 3_600_000);
    expect(arrivals).toHaveLength(2);
  });

  it('webhook_concurrent: two copies at the same instant, one handled, the other told it is in progress or a duplicate', async () => {
    const id = await clip('a fox simulate:webhook_concurrent');
    await run();
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]!.delivery).toBe(arrivals[0]!.delivery);
    const handled = arrivals.filter((a) => a.status === 200 && !a.answer.includes('duplicate'));
    const other = arrivals.filter((a) => !handled.includes(a));
    expect(handled).toHaveLength(1);
    expect(other).toHaveLength(1);
    expect(other[0]!.status === 503 ? JSON.parse(other[0]!.answer).code : JSON.parse(other[0]!.answer)).toEqual(other[0]!.status === 503 ? 'delivery_in_progress' : { received: true, duplicate: true });
    expect(runs.get(id)).toBe(1);
    // A 2xx to either copy delivers it: nothing is sent again.
    await run(3 * 3_600_000);
    expect(arrivals).toHaveLength(2);
  });

  it('webhook_cut: handled, the answer lost, sent again 30 s later and acknowledged as a duplicate', async () => {
    const id = await clip('a fox simulate:webhook_cut');
    await run();
    expect(arrivals.map((a) => a.status)).toEqual([200]);
    expect(runs.get(id)).toBe(1);
    const delivery = service.emitter.get(arrivals[0]!.delivery);
    expect(delivery).toMatchObject({ state: 'pending', attempts: [expect.objectContaining({ status: null, error: expect.stringMatching(/webhook_cut/) })] });
    await run(30_000);
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]).toMatchObject({ delivery: arrivals[0]!.delivery, status: 200 });
    expect(arrivals[1]!.deliveredAt > arrivals[0]!.deliveredAt).toBe(true);
    expect(JSON.parse(arrivals[1]!.answer)).toEqual({ received: true, duplicate: true });
    expect(runs.get(id)).toBe(1);
    expect(service.emitter.get(delivery!.id)).toMatchObject({ state: 'delivered' });
  });

  it('webhook_late: the delivery, then a copy 10 minutes old under another delivery id — refused as stale; with no window, caught as the same event', async () => {
    const id = await clip('a fox simulate:webhook_late');
    await run();
    expect(arrivals).toHaveLength(2);
    const [first, late] = arrivals as [Arrival, Arrival];
    expect(late.delivery).not.toBe(first.delivery);
    expect(Date.parse(first.deliveredAt) - Date.parse(late.deliveredAt)).toBe(LATE_BACKDATE_MS);
    expect([first.status, late.status]).toEqual([200, 400]);
    expect(JSON.parse(late.answer)).toMatchObject({ code: 'stale_delivery' });
    expect(runs.get(id)).toBe(1);

    arrivals = [];
    tolerance = false;
    const second = await clip('a fox simulate:webhook_late');
    await run();
    expect(arrivals.map((a) => a.status)).toEqual([200, 200]);
    expect(JSON.parse(arrivals[1]!.answer)).toEqual({ received: true, duplicate: true });
    expect(runs.get(second)).toBe(1);
  });

  it('webhook_previous_secret: signed with the secret before the rotation — accepted with both secrets, 401 and never retried with the new one only', async () => {
    const [key] = (await client.get('/settings/keys', { key: account.api_key })).body.data as Array<{ id: string }>;
    const rotated = await client.post(`/settings/keys/${key!.id}/rotate-secret`, {}, { key: account.api_key });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.webhook_secret as string;
    expect(fresh).not.toBe(account.webhook_secret);

    secrets = [fresh, account.webhook_secret];
    const id = await clip('a fox simulate:webhook_previous_secret');
    await run();
    expect(arrivals.map((a) => a.status)).toEqual([200]);
    expect(runs.get(id)).toBe(1);

    arrivals = [];
    secrets = [fresh];
    const lost = await clip('a fox simulate:webhook_previous_secret');
    await run();
    expect(arrivals.map((a) => a.status)).toEqual([401]);
    expect(JSON.parse(arrivals[0]!.answer)).toMatchObject({ code: 'invalid_signature' });
    await run(3 * 3_600_000);
    expect(arrivals).toHaveLength(1);
    expect(runs.get(lost)).toBeUndefined();
    // Without the marker the same key signs with its current secret.
    arrivals = [];
    const plain = await clip('a fox');
    await run();
    expect(arrivals.map((a) => a.status)).toEqual([200]);
    expect(runs.get(plain)).toBe(1);
  });

  it('webhook_out_of_order: a batch’s webhooks wait for its last clip, then go last-to-end first', async () => {
    const batch = await client.post(
      '/v1/videos/batch',
      { items: [{ prompt: 'one' }, { prompt: 'two' }, { prompt: 'three' }, { prompt: 'four' }], defaults: { prompt: 'x', callback_url: receiverUrl } },
      { key: account.api_key },
    );
    expect(batch.status).toBe(207);
    // The marker on one clip of the batch is enough: set on the account instead, for this batch only.
    await client.post('/test_helpers/webhook_chaos', { modes: ['webhook_out_of_order'] }, { key: account.api_key });
    // A batch is found among its account's clips (the lifecycle's index), never by reading every clip ever made.
    const everyClip = vi.spyOn(service.store.table('video'), 'values');
    await run(60_000);
    expect(everyClip).not.toHaveBeenCalled();
    everyClip.mockRestore();
    const ids = batch.body.items as Array<{ id: number }>;
    const ended = await Promise.all(ids.map(async ({ id }) => (await client.get(`/v1/videos/${id}`, { key: account.api_key })).body as { id: number; completed_at: string }));
    const lastFirst = [...ended].sort((a, b) => Date.parse(b.completed_at) - Date.parse(a.completed_at) || b.id - a.id).map((v) => v.id);
    expect(arrivals.map((a) => a.clipId)).toEqual(lastFirst);
    expect(arrivals.every((a) => a.status === 200)).toBe(true);
    for (const { id } of ids) expect(runs.get(id)).toBe(1);

    // The marker on one clip of a batch is enough.
    await client.post('/test_helpers/webhook_chaos', { modes: [] }, { key: account.api_key });
    arrivals = [];
    const marked = await client.post('/v1/videos/batch', { items: [{ prompt: 'one' }, { prompt: 'two simulate:webhook_out_of_order' }, { prompt: 'three' }], defaults: { callback_url: receiverUrl } }, { key: account.api_key });
    await run(60_000);
    const markedIds = (marked.body.items as Array<{ id: number }>).map(({ id }) => id);
    const views = await Promise.all(markedIds.map(async (id) => (await client.get(`/v1/videos/${id}`, { key: account.api_key })).body as { id: number; completed_at: string }));
    expect(arrivals.map((a) => a.clipId)).toEqual(views.sort((a, b) => Date.parse(b.completed_at) - Date.parse(a.completed_at) || b.id - a.id).map((v) => v.id));
  });

  it('POST /test_helpers/webhook_chaos sets an account’s modes for every clip, [] turns them off; bad input is a clear 400', async () => {
    const set = await client.post('/test_helpers/webhook_chaos', { modes: ['webhook_duplicate', 'webhook_duplicate'] }, { key: account.api_key });
    expect(set).toMatchObject({ status: 200, body: { object: 'webhook_chaos', account: account.id, modes: ['webhook_duplicate'] } });
    const id = await clip('a fox');
    await run();
    expect(arrivals.map((a) => a.status)).toEqual([200, 200]);
    expect(runs.get(id)).toBe(1);

    expect((await client.post('/test_helpers/webhook_chaos', { account: account.id, modes: [] }, { key: ADMIN })).body.modes).toEqual([]);
    arrivals = [];
    await clip('a fox');
    await run();
    expect(arrivals).toHaveLength(1);

    expect(await client.post('/test_helpers/webhook_chaos', { modes: ['webhook_late'] }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'account' } });
    expect(await client.post('/test_helpers/webhook_chaos', { account: 1, modes: ['webhook_late'] }, { key: account.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.post('/test_helpers/webhook_chaos', { account: 99_999, modes: [] }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', detail: 'No account 99999.' } });
    expect(await client.post('/test_helpers/webhook_chaos', { modes: ['webhook_sideways'] }, { key: account.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.post('/test_helpers/webhook_chaos', {}, { key: account.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.post('/test_helpers/webhook_chaos', { modes: [] }, { key: 'sk_nobody_at_all_000000000000000' })).toMatchObject({ status: 401 });
  });

  it('on an account’s own time: a key advanced an hour, a receiver on that account’s clock, each mode still handled once', async () => {
    const moved = await client.post('/test_helpers/clock/advance', { seconds: 3_600 }, { key: account.api_key });
    expect(moved.body).toMatchObject({ account: account.id, ahead_seconds: 3_600 });
    receiverClock = () => clock.nowOf(account.id);
    store = new MemoryDeliveryStore({ clock: receiverClock });
    const id = await clip('a fox simulate:webhook_duplicate simulate:webhook_concurrent simulate:webhook_late');
    await client.post('/test_helpers/clock/advance', { seconds: 10 }, { key: account.api_key });
    expect(arrivals.length).toBe(4);
    expect(arrivals.filter((a) => a.status === 400).map((a) => JSON.parse(a.answer).code)).toEqual(['stale_delivery']);
    expect(Date.parse(arrivals[0]!.deliveredAt)).toBeGreaterThan(clock.nowOf(null) + 3_000_000);
    expect(runs.get(id)).toBe(1);
  });

  it('reset forgets every account’s modes', async () => {
    await client.post('/test_helpers/webhook_chaos', { account: 1, modes: ['webhook_duplicate'] }, { key: ADMIN });
    expect(service.accounts.get(1)?.webhookChaos).toEqual(['webhook_duplicate']);
    await client.post('/test_helpers/reset', {}, { key: ADMIN });
    expect(service.accounts.get(1)?.webhookChaos).toBeUndefined();
  });
});

describe('webhook chaos keeps the emitter’s connect-time address check (--strict)', () => {
  it('a registered delivery to a name that resolves to a private address is refused before connecting, by every copy', async () => {
    const { createEmitter, MemoryOutbox } = await import('../../../src/emitter/index.js');
    const { WebhookChaos } = await import('../../../src/service/testing/chaos-transport.js');
    const chaos = new WebhookChaos();
    let wrapped = 0;
    // DNS rebinding: the name passed the URL check, then resolves to loopback at connect time.
    const lookup = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
      options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4)) as never;
    // As the service's own emitter under --strict: the chaos through the public `wrapTransport` (issue 31 item 5).
    const emitter = createEmitter({
      store: new MemoryOutbox(), allowPrivateNetworks: false, timeoutMs: 2_000, lookup,
      wrapTransport: (next) => chaos.wrap(async (request) => {
        wrapped++;
        return next(request);
      }),
    });
    await emitter.start();
    try {
      const id = 'dlv_strict_0000000000000000';
      const secret = 'whsec_strict_secret_000000000000';
      chaos.register(id, { modes: ['webhook_duplicate', 'webhook_concurrent'], secret, previousSecret: undefined });
      const failed = new Promise<Delivery>((resolve) => emitter.on('failed', resolve));
      await emitter.send({ id, url: 'https://hooks.example.com/in', secret, event: 'video.completed', payload: completedPayload() });
      const { attempts } = await failed;
      expect(wrapped).toBe(3);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]!.status).toBeNull();
      expect(attempts[0]!.error).toMatch(/private|loopback|refused|not allowed/i);
    } finally {
      await emitter.stop();
    }
  });
});
