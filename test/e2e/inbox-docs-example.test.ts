// docs/inbox.md's test as the page shows it ("Testing with the memory inbox and the simulated clock"): the
// last test here checks that the page still shows this file's text.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { expect, it, onTestFinished } from 'vitest';
import { createReceiver, MemoryDeliveryStore } from 'cliphook';
import { SimulatedClock, startService } from 'cliphook/service';

it('retries a failed run on the simulated clock', async () => {
  const svc = await startService({ clock: new SimulatedClock({ frozen: true }) });
  const clock = () => svc.clock.now();
  const receiver = createReceiver({
    secret: svc.webhookSecret,
    clock,
    store: new MemoryDeliveryStore({ clock }),
    inbox: { timers: svc.clock, minTimeout: 60_000 }, // beside a MemoryDeliveryStore: in memory
  });
  const runs: number[] = [];
  receiver.on('video.completed', (_event, { attempt }) => {
    runs.push(attempt);
    if (attempt === 1) throw new Error('database busy'); // the first run fails
  });
  const errors: Error[] = [];
  receiver.onError((error) => void errors.push(error));
  const app = express();
  app.post('/webhooks', receiver.express());
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onTestFinished(async () => {
    server.close();
    await receiver.close();
    await svc.close();
  });
  const callback_url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  const res = await fetch(`${svc.url}/videos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'a red fox', callback_url }),
  });
  expect(res.status).toBe(202);
  await svc.clock.advance(10_000); // the clip ends; the webhook is answered 202; the handler runs
  await receiver.inbox!.idle(); // that run has failed and its retry is set on the clock
  await svc.clock.advance(60_000); // the retry falls due: no sleep, no real time
  await receiver.inbox!.idle(); // the retry has run and its outcome is written
  expect(runs).toEqual([1, 2]);
  expect(errors.map((error) => error.message)).toEqual([expect.stringContaining('database busy')]);
  expect(await receiver.inbox!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
});

it("is the block docs/inbox.md shows, word for word", async () => {
  const { readFile } = await import('node:fs/promises');
  const page = await readFile(new URL('../../docs/inbox.md', import.meta.url), 'utf8');
  const self = await readFile(new URL(import.meta.url), 'utf8');
  const shown = page.slice(page.indexOf('```ts', page.indexOf('### Testing with the memory inbox')) + '```ts\n'.length);
  const code = self.slice(self.indexOf('import '), self.indexOf('\nit("is the block'));
  expect(shown.slice(0, shown.indexOf('```'))).toBe(code);
});
