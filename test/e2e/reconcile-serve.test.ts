// Issue 30 section 3, "against startService (and serve)": a real `cliphook serve` process, a receiver with
// a file inbox that is down for 4 h of the service's time (every webhook attempt answered 500), then
// `receiver.reconcile()` and `cliphook reconcile` against the same service: each clip handled once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createReceiver, MemoryDeliveryStore, type WebhookEvent, type WebhookReceiver } from 'cliphook';
import { cli, runBin, startServe, tempDir } from '../cli/helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The app's server: while `down`, every request is a 500 (an outage the service sees); then the receiver. */
async function appServer(state: { down: boolean; refused: number; receiver: WebhookReceiver | null }): Promise<string> {
  const server: Server = createServer((req, res) => {
    if (state.down || !state.receiver) {
      state.refused++;
      req.resume();
      res.writeHead(500).end('down');
      return;
    }
    void state.receiver.express()(req, res, () => res.writeHead(404).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}

it('a receiver down for 4 h of serve\'s time: reconcile hands each clip over once through its inbox, again nothing, and cliphook reconcile delivers only duplicates', async () => {
  const [dir, removeDir] = await tempDir();
  cleanups.push(removeDir);
  const served = await startServe(['--data', join(dir, 'service.json'), '--balance', '1000']);
  cleanups.push(served.stop);
  const { url, origin, apiKey, webhookSecret } = served.ready as { url: string; origin: string; apiKey: string; webhookSecret: string };
  const state: { down: boolean; refused: number; receiver: WebhookReceiver | null } = { down: true, refused: 0, receiver: null };
  const callback = await appServer(state);

  const ids: number[] = [];
  for (const prompt of ['a fox', 'a boat', 'a kite', 'x simulate:upstream_error']) {
    const res = await fetch(`${url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt, callback_url: callback }) });
    expect(res.status).toBe(202);
    ids.push(((await res.json()) as { id: number }).id);
  }
  const since = new Date(Date.now() - 60_000).toISOString();
  // Four hours of the account's time: each clip ends, and all six attempts of each webhook get a 500.
  expect(await runBin(['service', 'advance', String(4 * 3600), '--url', origin, '--api-key', apiKey])).toMatchObject({ code: 0 });
  expect(state.refused).toBe(4 * 6); // the first attempt and the five retries of spec 6.4, each a 500

  const receiver = createReceiver({ secret: webhookSecret, store: new MemoryDeliveryStore(), inbox: { file: join(dir, 'inbox.json') } });
  cleanups.push(() => receiver.close());
  const handled: WebhookEvent[] = [];
  receiver.onAny((event, { source }) => {
    expect(source).toBe('reconcile');
    handled.push(event);
  });
  state.receiver = receiver;
  state.down = false;

  const first = await receiver.reconcile({ apiKey, baseUrl: url, since });
  expect(first).toMatchObject({ checked: 4, handled: 4, duplicates: 0, failed: 0 });
  await expect.poll(() => handled.length, { timeout: 10_000 }).toBe(4);
  expect(handled.map((event) => event.id).sort()).toEqual([...ids].sort());
  expect(handled.filter((event) => event.event === 'video.failed')).toHaveLength(1);
  expect(await receiver.reconcile({ apiKey, baseUrl: url, since })).toMatchObject({ checked: 4, handled: 0, duplicates: 4 });

  // Any receiver reached over HTTP: the command signs each event; this one had them all.
  const sent = await cli('reconcile', '--api-key', apiKey, '--url', url, '--to', callback, '--secret', webhookSecret, '--since', since);
  expect(sent.code).toBe(0);
  expect(sent.stdout).toMatch(/4 clips ended since .*: 0 delivered, 4 duplicates, 0 failed/);
  expect(handled).toHaveLength(4);
  expect((await receiver.inbox!.stats()).done).toBe(4);
}, 60_000);
