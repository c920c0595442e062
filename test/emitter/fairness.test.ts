import { describe, expect, it } from 'vitest';
import { createEmitter, MemoryOutbox, type FetchFunction, type WebhookEmitter } from 'cliphook';
import { backends, useBackend } from './backends.js';
import { completedPayload, FakeClock, settled } from './helpers.js';

const secret = 'whsec_test_fairness';
const SLOW = 'https://tarpit.example.com/hooks';
const FAST = 'https://fast.example.com/hooks';

/**
 * A transport with no network: requests to the tarpit's origin never answer (until their attempt's
 * signal aborts them, at `timeoutMs` on the fake clock), every other request answers 200 at once.
 */
function tarpitFetch() {
  const calls: string[] = [];
  let open = 0;
  const fetch: FetchFunction = (url, init) => {
    calls.push(url);
    if (!url.startsWith('https://tarpit.example.com/')) return Promise.resolve(new Response('{"received":true}', { status: 200 }));
    open++;
    return new Promise<Response>((_resolve, reject) => {
      init.signal!.addEventListener('abort', () => {
        open--;
        reject(init.signal!.reason);
      }, { once: true });
    });
  };
  return { fetch, calls, open: () => open };
}

/** Stops an emitter whose attempts hang: `stop()` waits for them, and they end at their time-out. */
async function stopPastTimeouts(emitter: WebhookEmitter, clock: FakeClock): Promise<void> {
  let stopped = false;
  const stopping = emitter.stop().finally(() => (stopped = true));
  // On Redis a parked attempt can still begin while the worker closes: each round ends the ones in flight.
  await expect.poll(() => {
    clock.advance(10_000);
    return stopped;
  }, { timeout: 15_000 }).toBe(true);
  await stopping;
}

// Every test runs on the outbox and on BullMQ (Redis): one destination's backlog holds no other's webhooks.
describe.each(await backends())('fair delivery across destinations on $name', (backend) => {
  const { emitterFor } = useBackend(backend);

  it('delivers another destination at once while one that never answers holds 1,000 deliveries', async () => {
    const clock = new FakeClock();
    const transport = tarpitFetch();
    const emitter = emitterFor({ clock, fetch: transport.fetch, retainFinished: 2_000 });
    await emitter.start();
    for (let from = 0; from < 1_000; from += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, i) =>
        emitter.send({ url: SLOW, secret, event: 'video.completed', payload: completedPayload(from + i + 1) })));
    }
    // The tarpit takes its share (a quarter of the 16 slots by default) and no more.
    await expect.poll(() => transport.open(), { timeout: 15_000 }).toBe(4);

    const fast = await emitter.send({ url: FAST, secret, event: 'video.completed', payload: completedPayload(5_000) });
    const delivered = await settled(emitter, fast.id);
    expect(delivered.state).toBe('delivered');
    expect(delivered.attempts).toHaveLength(1);
    expect(transport.open()).toBe(4);

    // The tarpit's attempts time out; its next ones take their place, and still leave room for others.
    clock.advance(10_000);
    await expect.poll(() => transport.calls.filter((url) => url === SLOW).length, { timeout: 15_000 }).toBe(8);
    expect(transport.open()).toBe(4);
    const again = await emitter.send({ url: FAST, secret, event: 'video.completed', payload: completedPayload(5_001) });
    expect((await settled(emitter, again.id)).state).toBe('delivered');
    await stopPastTimeouts(emitter, clock);
  });

  it('holds each destination to `maxPerDestination` attempts at once', async () => {
    const clock = new FakeClock();
    const transport = tarpitFetch();
    const emitter = emitterFor({ clock, fetch: transport.fetch, concurrency: 16, maxPerDestination: 7 });
    await emitter.start();
    await Promise.all(Array.from({ length: 30 }, (_, i) =>
      emitter.send({ url: `${SLOW}/${i}`, secret, event: 'video.completed', payload: completedPayload(i + 1) })));
    await expect.poll(() => transport.open(), { timeout: 15_000 }).toBe(7);
    // Another path on the same origin is the same destination; another port is not.
    const sameOrigin = await emitter.send({ url: 'https://tarpit.example.com/other', secret, event: 'video.completed', payload: completedPayload(99) });
    const otherPort = await emitter.send({ url: 'https://tarpit.example.com:8443/hooks', secret, event: 'video.completed', payload: completedPayload(98) });
    expect((await settled(emitter, otherPort.id)).state).toBe('delivered');
    expect(emitter.get(sameOrigin.id)!.state).toBe('pending');
    expect(transport.open()).toBe(7);
    await stopPastTimeouts(emitter, clock);
  });
});

describe('fair delivery across destinations on the outbox', () => {
  it('takes due deliveries round-robin across destinations, so a backlog of 1,000 goes in turn with one more', async () => {
    // One slot, and the first tarpit attempt holds it: everything else queues up behind it meanwhile.
    const calls: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const fetch: FetchFunction = async (url) => {
      calls.push(url);
      if (calls.length === 1) await held;
      return new Response('', { status: 200 });
    };
    const clock = new FakeClock();
    const emitter = createEmitter({ store: new MemoryOutbox(), clock, fetch, concurrency: 1, retainFinished: 2_000 });
    await emitter.start();
    try {
      await Promise.all(Array.from({ length: 1_000 }, (_, i) =>
        emitter.send({ url: SLOW, secret, event: 'video.completed', payload: completedPayload(i + 1) })));
      // Later by a millisecond each, so the order by time alone is strict: the backlog first.
      clock.advance(1);
      const fast = await emitter.send({ url: FAST, secret, event: 'video.completed', payload: completedPayload(5_000) });
      clock.advance(1);
      const later = await emitter.send({ url: 'https://third.example.com/hooks', secret, event: 'video.completed', payload: completedPayload(5_001) });
      release();
      await settled(emitter, later.id);
      await settled(emitter, fast.id);
      // The tarpit's first (holding the slot), then one each in turn: not after the backlog of 999.
      expect(calls.slice(0, 4)).toEqual([SLOW, SLOW, FAST, 'https://third.example.com/hooks']);
    } finally {
      await emitter.stop();
    }
  });

  it.each([[0], [1.5], [-1], ['4']])('refuses maxPerDestination %o with a TypeError naming it', (value) => {
    expect(() => createEmitter({ store: new MemoryOutbox(), maxPerDestination: value as number })).toThrow(TypeError);
    expect(() => createEmitter({ store: new MemoryOutbox(), maxPerDestination: value as number })).toThrow(/`maxPerDestination`/);
  });
});
