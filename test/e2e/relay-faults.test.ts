import { afterEach, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer } from 'cliphook';
import { eventText, signedHeaders, startLocalApp, testdir } from '../relay/fixtures.js';
import { startCuttableProxy } from '../helpers/proxy.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});


it('loses nothing and processes nothing twice when the listener socket drops 100 times during 2,000 events', async () => {
  const TOTAL = 2_000;
  const DROPS = 100;
  const CONCURRENCY = 8;
  const { dir, cleanup } = await testdir();
  cleanups.push(cleanup);

  const relay = createRelayServer({ file: `${dir}/relay.json` });
  const { url: relayUrl } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const proxy = await startCuttableProxy(new URL(relayUrl));
  cleanups.push(proxy.close);

  let drops = 0;
  const app = await startLocalApp(() => {
    // Cut the listener's connection after every 20th first-time delivery: 100 cuts over 2,000 events.
    if (app.handled.length % (TOTAL / DROPS) === 0 && drops < DROPS) {
      drops++;
      proxy.cut();
    }
  });
  cleanups.push(app.close);

  const channel = await createChannel(relayUrl);
  const listener = await connectListener({
    relayUrl: proxy.url,
    channel: channel.channel,
    token: channel.token,
    forwardTo: `${app.url}/webhooks`,
    reconnect: { minTimeout: 1, maxTimeout: 10 },
  });
  cleanups.push(() => listener.close());
  let connected = true;
  let onConnect: Array<() => void> = [];
  listener.on('reconnecting', () => (connected = false));
  listener.on('connected', () => {
    connected = true;
    for (const resolve of onConnect.splice(0)) resolve();
  });
  const whenConnected = () => (connected ? Promise.resolve() : new Promise<void>((resolve) => onConnect.push(resolve)));

  // The sender: like the emitter, it retries every non-2xx that is not a 4xx; here without its long waits,
  // but only once the listener is back, so the test neither sleeps nor spins.
  const ingress = channel.url;
  const statuses = new Map<number, number>();
  let attempts = 0;
  let next = 1;
  async function sender() {
    while (next <= TOTAL) {
      const id = next++;
      const body = eventText(id);
      const headers = signedHeaders(body, `dlv_${id}`);
      for (;;) {
        attempts++;
        const res = await fetch(ingress, { method: 'POST', body, headers }).catch(() => null);
        const status = res?.status ?? 0;
        await res?.arrayBuffer();
        if (status >= 200 && status < 300) break;
        expect(status).not.toBe(400);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        await whenConnected();
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, sender));

  const ids = app.handled.map(({ event }) => event.id);
  expect(drops).toBe(DROPS);
  expect(ids).toHaveLength(TOTAL);
  expect(new Set(ids).size).toBe(TOTAL);
  expect(Math.min(...ids)).toBe(1);
  expect(Math.max(...ids)).toBe(TOTAL);
  // The drops really hit the sender: it saw 503s and retried.
  expect(statuses.get(503) ?? 0).toBeGreaterThan(0);
  expect(attempts).toBeGreaterThan(TOTAL);
}, 90_000);
