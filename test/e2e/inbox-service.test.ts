// Issue 30 section 3: the receiver's inbox against the simulated service, as a user would run it:
// clips with a callback_url, the service's own webhook attempts and retries, the simulated clock.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { createReceiver, MemoryDeliveryStore, type InboxOptions, type WebhookEvent } from 'cliphook';
import { SimulatedClock, startService, type StartedService } from 'cliphook/service';
import { tempDir } from '../helpers/webhooks.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(inbox: Partial<InboxOptions> = {}) {
  const svc = await startService({ clock: new SimulatedClock({ frozen: true }) });
  cleanups.push(() => svc.close());
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const clock = () => svc.clock.now();
  const receiver = createReceiver({ secret: svc.webhookSecret, clock, store: new MemoryDeliveryStore({ clock }), inbox: { file: tmp.file('inbox.json'), timers: svc.clock, ...inbox } });
  const errors: unknown[] = [];
  receiver.onError((error) => void errors.push(error));
  const server = createServer(receiver.express()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  cleanups.push(() => receiver.close());
  const callback_url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  const clip = async () => {
    const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a red fox', callback_url }) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: number }).id;
  };
  /** The statuses the service got for each clip's webhook, by clip id. */
  const attempts = (id: number) => svc.emitter.list({ limit: 1000 }).filter((d) => (d.payload as { id: number }).id === id).flatMap((d) => d.attempts.map((a) => a.status));
  return { svc, receiver, clip, attempts, errors };
}

it('a handler that takes seconds is acknowledged at once (202, one attempt) and runs once', async () => {
  const { svc, receiver, clip, attempts } = await setup();
  const started: number[] = [];
  const finished: number[] = [];
  receiver.on('video.completed', async (event) => {
    started.push(event.id);
    await new Promise<void>((resolve) => svc.clock.setTimeout(resolve, 20_000)); // a slow third party
    finished.push(event.id);
  });
  const id = await clip();
  await svc.clock.advance(10_000); // the clip ends; its webhook is answered
  expect(attempts(id)).toEqual([202]);
  await receiver.inbox!.idle({ handlers: false }); // the handler has started; it waits on the clock
  expect(started).toEqual([id]);
  expect(finished).toEqual([]);
  await svc.clock.advance(60_000); // past the service's first retry time: nothing is sent again
  await receiver.inbox!.idle();
  expect(finished).toEqual([id]);
  expect(started).toEqual([id]);
  expect(attempts(id)).toEqual([202]);
});

it('a handler that fails twice runs three times, and the service saw one 2xx', async () => {
  // Waits longer than the service's own first retry (30 s): had it seen a failure, it would have sent again.
  const { svc, receiver, clip, attempts, errors } = await setup({ minTimeout: 60_000, maxTimeout: 600_000 });
  const runs: number[] = [];
  receiver.on('video.completed', (_event, { attempt }) => {
    runs.push(attempt);
    if (attempt <= 2) throw new Error('database busy');
  });
  const id = await clip();
  await svc.clock.advance(10_000);
  await receiver.inbox!.idle(); // the failed run's retry is set on the clock
  expect(runs).toEqual([1]);
  await svc.clock.advance(60_000);
  await receiver.inbox!.idle();
  expect(runs).toEqual([1, 2]);
  await svc.clock.advance(120_000);
  await receiver.inbox!.idle();
  expect((await receiver.inbox!.stats()).done).toBe(1);
  expect(runs).toEqual([1, 2, 3]);
  expect(attempts(id)).toEqual([202]);
  expect(errors).toHaveLength(2);
});

it('a handler that always fails ends dead, and once fixed, a replay handles it', async () => {
  const { svc, receiver, clip, attempts } = await setup({ retries: 2, minTimeout: 1000, maxTimeout: 1000 });
  let fixed = false;
  const handled: Array<{ id: number; source: string }> = [];
  receiver.on('video.completed', (event, { source }) => {
    if (!fixed) throw new Error('bug in the handler');
    handled.push({ id: event.id, source });
  });
  const id = await clip();
  await svc.clock.advance(10_000);
  for (let i = 0; i < 3; i++) {
    await receiver.inbox!.idle();
    await svc.clock.advance(1_000);
  }
  await receiver.inbox!.idle();
  expect(await receiver.inbox!.stats()).toMatchObject({ dead: 1, pending: 0 });
  const [dead] = await receiver.inbox!.list({ state: 'dead' });
  expect(dead).toMatchObject({ attempts: 3, lastError: 'bug in the handler' });
  expect(JSON.parse(dead!.body)).toMatchObject({ id, event: 'video.completed' });
  fixed = true;
  await receiver.inbox!.replay(dead!.id);
  await receiver.inbox!.idle();
  expect(handled).toEqual([{ id, source: 'replay' }]);
  expect(attempts(id)).toEqual([202]);
});

it('past maxPending the receiver answers 503 with Retry-After; the service retries and nothing is lost', async () => {
  const { svc, receiver, clip, attempts } = await setup({ maxPending: 1, concurrency: 1 });
  const handled: number[] = [];
  let open = false;
  const waiting: Array<() => void> = [];
  receiver.on('video.completed', async (event: WebhookEvent) => {
    if (!open) await new Promise<void>((resolve) => waiting.push(resolve));
    handled.push(event.id);
  });
  const ids = [await clip(), await clip(), await clip()];
  await svc.clock.advance(10_000);
  const first = ids.map((id) => attempts(id)[0]);
  expect(first.filter((s) => s === 202)).toHaveLength(1);
  expect(first.filter((s) => s === 503)).toHaveLength(2);
  open = true;
  for (const resolve of waiting.splice(0)) resolve();
  await receiver.inbox!.idle();
  expect(handled).toHaveLength(1);
  // The spec's first retry comes 30 s later; with one slot free, one more gets in each time around.
  for (let i = 0; i < 6 && handled.length < 3; i++) {
    await svc.clock.advance(30_000);
    await receiver.inbox!.idle();
    await svc.clock.advance(120_000);
    await receiver.inbox!.idle();
  }
  expect(handled.sort()).toEqual([...ids].sort());
  for (const id of ids) expect(attempts(id).at(-1)).toBe(202);
  expect(await receiver.inbox!.stats()).toMatchObject({ pending: 0, running: 0, dead: 0, done: 3 });
});

it('with webhook chaos (duplicate, concurrent, cut, late) each clip is handled exactly once through the inbox', async () => {
  const { svc, receiver, clip } = await setup();
  const handled: number[] = [];
  receiver.on('video.completed', (event) => void handled.push(event.id));
  const chaos = await fetch(`${svc.origin}/test_helpers/webhook_chaos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ modes: ['webhook_duplicate', 'webhook_concurrent', 'webhook_cut', 'webhook_late'] }),
  });
  expect(chaos.status).toBe(200);
  const ids = [await clip(), await clip(), await clip()];
  await svc.clock.advance(10_000); // the clips end; each webhook arrives twice, at once, cut, late
  await svc.clock.advance(30_000); // the retries of the cut attempts
  await svc.clock.advance(120_000);
  await receiver.inbox!.idle();
  expect(await receiver.inbox!.stats()).toMatchObject({ pending: 0, running: 0 });
  expect(handled.sort()).toEqual([...ids].sort());
  expect((await receiver.inbox!.stats()).done).toBe(3);
});
