// reconcile's deadlines, per GET (headers and body) and per run, against servers on 127.0.0.1 that never
// answer or drip; a call made during a run joins it or is refused at once; the timer queues nothing. The
// deadlines are timed on injected timers that the test fires: nothing sleeps.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createReceiver, MemoryDeliveryStore, ReconcileError, type WebhookEvent } from '../../src/index.js';
import { SECRET } from '../helpers/webhooks.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** Timers that fire only when the test says: `fire(ms)` runs the oldest pending timer set for `ms`. */
function manualTimers() {
  const pending = new Map<number, { ms: number; callback: () => void }>();
  let last = 0;
  const timers = {
    setTimeout: (callback: () => void, ms: number) => (pending.set(++last, { ms, callback }), last),
    clearTimeout: (handle: unknown) => void pending.delete(handle as number),
  };
  return {
    timers,
    /** How many timers of `ms` are pending. */
    count: (ms: number) => [...pending.values()].filter((timer) => timer.ms === ms).length,
    fire(ms: number): void {
      const found = [...pending].find(([, timer]) => timer.ms === ms);
      if (!found) throw new Error(`No pending timer of ${ms} ms (pending: ${[...pending.values()].map((t) => t.ms).join(', ')})`);
      pending.delete(found[0]);
      found[1].callback();
    },
  };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A service on 127.0.0.1 whose answers the test writes: every request is kept, with whether its socket closed. */
async function service(onRequest: (req: IncomingMessage, res: ServerResponse) => void = () => undefined) {
  const requests: Array<{ res: ServerResponse; closed: boolean }> = [];
  const server = createServer((req, res) => {
    const request = { res, closed: false };
    requests.push(request);
    res.on('close', () => (request.closed = true));
    onRequest(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests };
}

function receiver() {
  const made = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore({ clock: () => NOW }), clock: () => NOW });
  const seen: number[] = [];
  made.onAny((event: WebhookEvent) => void seen.push(event.id));
  return { receiver: made, seen };
}

/** A done clip as GET /videos lists it (spec 2.1). */
function clip(id: number, completedAt: number) {
  return {
    id, status: 'done', prompt: null, video_url: `https://svc.test/v1/media/${id}.mp4`, poster_url: null, share_page_url: null, credits_used: 9, refunded: false,
    model: 'standard', duration: 5, ratio: '16:9', progress: null, error: null, error_code: null, created_at: iso(completedAt - MIN), completed_at: iso(completedAt), poll_url: null,
  };
}

describe('reconcile deadlines', () => {
  it('a GET whose answer never starts is cut off at requestTimeout, its socket closed', async () => {
    const svc = await service();
    const clock = manualTimers();
    const { receiver: r } = receiver();
    const run = r.reconcile({ apiKey: 'sk_x', baseUrl: svc.baseUrl, since: NOW - 60 * MIN, timers: clock.timers, requestTimeout: 5_000 });
    await vi.waitFor(() => expect(svc.requests).toHaveLength(1));
    expect(clock.count(5_000)).toBe(1);
    clock.fire(5_000);
    const error = await run.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReconcileError);
    expect(error).toMatchObject({ code: 'request_timeout', message: expect.stringContaining('5000 ms') });
    await vi.waitFor(() => expect(svc.requests[0]!.closed).toBe(true));
    expect(clock.count(5_000)).toBe(0);
  });

  it('a GET whose body drips is cut off at requestTimeout: the bytes that keep coming do not extend it', async () => {
    const svc = await service((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[');
    });
    const clock = manualTimers();
    const { receiver: r } = receiver();
    let settled = false;
    const run = r.reconcile({ apiKey: 'sk_x', baseUrl: svc.baseUrl, since: NOW - 60 * MIN, timers: clock.timers, requestTimeout: 5_000 });
    void run.then(() => (settled = true), () => (settled = true));
    await vi.waitFor(() => expect(svc.requests).toHaveLength(1));
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => svc.requests[0]!.res.write(' ', () => resolve()));
    expect(settled).toBe(false);
    expect(clock.count(5_000)).toBe(1);
    clock.fire(5_000);
    await expect(run).rejects.toMatchObject({ code: 'request_timeout' });
    await vi.waitFor(() => expect(svc.requests[0]!.closed).toBe(true));
  });

  it('a run is cut off at runTimeout with run_timeout and moves no cursor; a call meanwhile joins it with the same options, and is refused at once with others', async () => {
    const svc = await service();
    const clock = manualTimers();
    const { receiver: r } = receiver();
    const options = { apiKey: 'sk_x', baseUrl: svc.baseUrl, timers: clock.timers, requestTimeout: 60_000, runTimeout: 120_000 };
    const first = r.reconcile(options);
    expect(r.reconcile({ ...options })).toBe(first);
    const other = await r.reconcile({ ...options, since: NOW - 5 * MIN }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(ReconcileError);
    expect(other).toMatchObject({ code: 'reconcile_in_progress' });
    await vi.waitFor(() => expect(svc.requests).toHaveLength(1));
    clock.fire(120_000);
    await expect(first).rejects.toMatchObject({ code: 'run_timeout', message: expect.stringContaining('120000 ms') });
    expect(clock.count(60_000)).toBe(0);
    await vi.waitFor(() => expect(svc.requests[0]!.closed).toBe(true));
    // The next call is a run of its own, from where the cursor was: nowhere yet, so 24 hours back.
    const fetch = (async () => Response.json({ data: [], total: 0, limit: 100, offset: 0 })) as unknown as typeof globalThis.fetch;
    expect(await r.reconcile({ ...options, fetch })).toMatchObject({ since: iso(NOW - 24 * 60 * MIN) });
  });

  it('a handler that never settles: the run ends at runTimeout, hands nothing more over, and the next run is not held by it', async () => {
    const clock = manualTimers();
    const store = new MemoryDeliveryStore({ clock: () => NOW });
    const r = createReceiver({ secret: SECRET, store, clock: () => NOW });
    const ran: number[] = [];
    r.onAny((event) => {
      ran.push(event.id);
      if (event.id === 1) return new Promise<void>(() => undefined);
    });
    const list = [clip(2, NOW - 10 * MIN), clip(1, NOW - 20 * MIN)];
    const fetch = (async (url: string) => {
      const data = new URL(url).searchParams.get('status') === 'done' ? list : [];
      return Response.json({ data, total: data.length, limit: 100, offset: 0 });
    }) as unknown as typeof globalThis.fetch;
    const options = { apiKey: 'sk_x', baseUrl: 'https://svc.test/v1', since: NOW - 60 * MIN, fetch, timers: clock.timers, runTimeout: 120_000 };
    const first = r.reconcile(options);
    await vi.waitFor(() => expect(ran).toEqual([1]));
    clock.fire(120_000);
    await expect(first).rejects.toMatchObject({ code: 'run_timeout' });
    expect(ran).toEqual([1]);
    // Clip 1 is still claimed by the hung handler: failed for this run, which hands clip 2 over.
    expect(await r.reconcile(options)).toMatchObject({ checked: 2, handled: 1, failed: 1, cursor: iso(NOW - 20 * MIN) });
    expect(ran).toEqual([1, 2]);
    await r.close();
  });

  it('on a timer: a hung run ends at runTimeout (onError hears it), the next is armed `every` after, and a call meanwhile joins instead of queueing', async () => {
    const svc = await service();
    const clock = manualTimers();
    const failures: string[] = [];
    const schedule = { apiKey: 'sk_x', baseUrl: svc.baseUrl, timers: clock.timers, requestTimeout: 60_000, runTimeout: 120_000 };
    const r = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), reconcile: { ...schedule, every: 15 * MIN, onError: (error) => void failures.push((error as ReconcileError).code) } });
    clock.fire(0);
    await vi.waitFor(() => expect(svc.requests).toHaveLength(1));
    const joined = r.reconcile(schedule);
    clock.fire(120_000);
    await expect(joined).rejects.toMatchObject({ code: 'run_timeout' });
    await vi.waitFor(() => expect(failures).toEqual(['run_timeout']));
    expect(clock.count(15 * MIN)).toBe(1);
    expect(svc.requests).toHaveLength(1);
    clock.fire(15 * MIN);
    await vi.waitFor(() => expect(svc.requests).toHaveLength(2));
    // close() stops the hung run at once and leaves no timer.
    await r.close();
    expect(clock.count(15 * MIN) + clock.count(120_000) + clock.count(60_000)).toBe(0);
    expect(failures).toEqual(['run_timeout']);
  });

  it('refuses a requestTimeout or runTimeout that is not a positive number of milliseconds a timer can hold', () => {
    const { receiver: r } = receiver();
    const base = { apiKey: 'sk_x', baseUrl: 'https://svc.test/v1' };
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '5000']) {
      expect(() => r.reconcile({ ...base, requestTimeout: bad as number })).toThrow(/`requestTimeout`/);
      expect(() => r.reconcile({ ...base, runTimeout: bad as number })).toThrow(/`runTimeout`/);
    }
    expect(() => r.reconcile({ ...base, timers: {} as never })).toThrow(/`timers`/);
  });
});
