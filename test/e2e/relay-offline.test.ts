// Issue 10, finding 2: "nothing is lost while you are offline" holds for an event buffered an hour,
// past the receiver's 5-minute replay window. One injected clock for the relay, the listener and the app.
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createReceiver, createRelayServer, MemoryDeliveryStore, sign, type ChannelInfo, type ListenerReply, type WebhookContext } from 'cliphook';
import { eventText, listen, manualScheduler, SECRET, signedHeaders, unacked } from '../relay/fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const T0 = Date.parse('2026-11-21T23:58:50.000Z');
const HOUR = 3_600_000;

/** The relay, with a clock the test moves. */
async function setup() {
  const clock = { now: T0 };
  const relay = createRelayServer({ file: false, clock: () => clock.now, scheduler: manualScheduler() });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const channel = await createChannel(url);
  return { clock, relayUrl: url, channel };
}

/** A real receiver (5-minute window) on the same clock: `handled` are the deliveries its handler ran for. */
async function startApp(clock: { now: number }, skewMs = 0) {
  const handled: WebhookContext[] = [];
  const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), tolerance: 300, clock: () => clock.now + skewMs });
  receiver.onAny((_event, context) => void handled.push(context));
  const app = express();
  app.post('/webhooks', receiver.express());
  const server = await listen(app);
  cleanups.push(server.close);
  return { url: `${server.url}/webhooks`, handled };
}

async function startListener(relayUrl: string, channel: ChannelInfo, forwardTo: string, clock: { now: number }, extra: object = {}) {
  const listener = await connectListener({ relayUrl, channel: channel.channel, token: channel.token, forwardTo, clock: () => clock.now, scheduler: manualScheduler(), ...extra });
  cleanups.push(() => listener.close());
  const replies: ListenerReply[] = [];
  listener.on('reply', (reply) => replies.push(reply));
  const nextReply = () => new Promise<ListenerReply>((resolve) => listener.once('reply', resolve));
  return { listener, replies, nextReply };
}


function signedEvent(id: number, deliveredAt: number) {
  const body = eventText(id, { deliveredAt: new Date(deliveredAt).toISOString() });
  return { body, headers: signedHeaders(body, `dlv_${id}`) };
}

describe('an event buffered an hour', () => {
  it('with a secret: is re-signed on catch-up and reaches the app once, every other byte as sent', async () => {
    const { clock, relayUrl, channel } = await setup();
    const app = await startApp(clock);
    const { body, headers } = signedEvent(1, T0);
    expect((await fetch(channel.url, { method: 'POST', body, headers })).status).toBe(503);
    clock.now += HOUR;
    const { nextReply } = await startListener(relayUrl, channel, app.url, clock, { secret: SECRET });
    const reply = await nextReply();
    expect(reply).toMatchObject({ status: 200, stale: false, event: { backlog: true, resigned: true, signatureValid: true, deliveryId: 'dlv_1' } });
    expect(Number.isInteger(reply.durationMs)).toBe(true); // whole milliseconds, not 2.78129100000001
    expect(app.handled).toHaveLength(1);
    expect(app.handled[0]!.deliveryId).toBe('dlv_1');
    const arrived = Buffer.from(app.handled[0]!.rawBody).toString();
    expect(arrived).toBe(body.replace(new Date(T0).toISOString(), new Date(T0 + HOUR).toISOString()));
    expect(await unacked(relayUrl, channel)).toEqual([]);
  });

  it('without a secret: the stale refusal does not acknowledge it; a restart with --secret delivers it', async () => {
    const { clock, relayUrl, channel } = await setup();
    const app = await startApp(clock);
    const { body, headers } = signedEvent(2, T0);
    expect((await fetch(channel.url, { method: 'POST', body, headers })).status).toBe(503);
    clock.now += HOUR;
    const first = await startListener(relayUrl, channel, app.url, clock);
    expect(await first.nextReply()).toMatchObject({ status: 400, stale: true, event: { backlog: true, resigned: false } });
    await first.listener.close();
    expect(app.handled).toHaveLength(0);
    expect(await unacked(relayUrl, channel)).toEqual([1]); // still promised
    const second = await startListener(relayUrl, channel, app.url, clock, { secret: SECRET });
    expect(await second.nextReply()).toMatchObject({ status: 200, event: { resigned: true } });
    expect(app.handled.map((context) => context.deliveryId)).toEqual(['dlv_2']);
    expect(await unacked(relayUrl, channel)).toEqual([]);
  });

  it('--replay an hour later: re-signed with a secret; without one, shown as stale', async () => {
    const { clock, relayUrl, channel } = await setup();
    const first = await startApp(clock);
    const live = await startListener(relayUrl, channel, first.url, clock, { secret: SECRET });
    const { body, headers } = signedEvent(3, T0);
    expect((await fetch(channel.url, { method: 'POST', body, headers })).status).toBe(200);
    expect(live.replies[0]?.event.resigned).toBe(false); // fresh: sent as it came
    await live.listener.close();
    clock.now += HOUR;
    const restarted = await startApp(clock); // a new app with an empty database, as after a reset
    const withSecret = await startListener(relayUrl, channel, restarted.url, clock, { secret: SECRET });
    expect(await withSecret.listener.replay('dlv_3')).toMatchObject({ status: 200, event: { replay: true, resigned: true } });
    expect(restarted.handled.map((context) => context.deliveryId)).toEqual(['dlv_3']);
    await withSecret.listener.close();
    const without = await startListener(relayUrl, channel, restarted.url, clock);
    expect(await without.listener.replay('dlv_3')).toMatchObject({ status: 400, stale: true, event: { replay: true, resigned: false } });
  });

  it('is never laundered: a forged one is refused 401, and a capture that was stale when the relay took it stays stale', async () => {
    const { clock, relayUrl, channel } = await setup();
    const app = await startApp(clock);
    const forged = signedEvent(4, T0);
    const captured = signedEvent(5, T0 - HOUR); // signed an hour before it reached the relay
    expect((await fetch(channel.url, { method: 'POST', body: forged.body, headers: { ...forged.headers, 'x-service-signature': sign(forged.body, 'whsec_guess') } })).status).toBe(503);
    expect((await fetch(channel.url, { method: 'POST', body: captured.body, headers: captured.headers })).status).toBe(503);
    clock.now += HOUR;
    const { replies, listener } = await startListener(relayUrl, channel, app.url, clock, { secret: SECRET });
    await new Promise<void>((resolve) => listener.on('reply', () => replies.length === 2 && resolve()));
    expect(replies.map((reply) => [reply.status, reply.refused?.code ?? null, reply.event.resigned, reply.stale])).toEqual([
      [401, 'invalid_signature', false, false],
      [400, null, false, false], // the app's stale_delivery, the final answer
    ]);
    expect(app.handled).toHaveLength(0);
    expect(await unacked(relayUrl, channel)).toEqual([]);
  });
});

describe('a live event on a machine whose clock is 10 minutes ahead', () => {
  it('is re-signed with a secret; without one, the sender gets 502 and retries instead of a final 400', async () => {
    const { clock, relayUrl, channel } = await setup();
    const skewed = { get now() { return clock.now + 10 * 60_000; } };
    const app = await startApp(skewed);
    const withSecret = await startListener(relayUrl, channel, app.url, skewed, { secret: SECRET });
    const one = signedEvent(6, T0);
    expect((await fetch(channel.url, { method: 'POST', body: one.body, headers: one.headers })).status).toBe(200);
    expect(withSecret.replies[0]).toMatchObject({ status: 200, event: { backlog: false, resigned: true } });
    await withSecret.listener.close();
    const without = await startListener(relayUrl, channel, app.url, skewed);
    const two = signedEvent(7, T0);
    const res = await fetch(channel.url, { method: 'POST', body: two.body, headers: two.headers });
    expect(res.status).toBe(502);
    expect(without.replies[0]).toMatchObject({ status: 400, stale: true });
    expect(app.handled.map((context) => context.deliveryId)).toEqual(['dlv_6']);
  });
});
