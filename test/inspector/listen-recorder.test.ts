// What the listen inspector records from a real relay and listener, and how it replays (issue 14).
import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer, sign } from 'cliphook';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { withDeliveredAt } from '../../src/relay/resign.js';
import { eventText, listen, SECRET, signedHeaders } from '../relay/fixtures.js';
import { recordingApp } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup({ secret, maxBodyBytes, forwardTo }: { secret?: string; maxBodyBytes?: number; forwardTo?: string } = {}) {
  const app = await recordingApp(({ event }) => (event === 'video.failed' ? 500 : 200));
  cleanups.push(app.close);
  const relay = createRelayServer({ file: false });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const channel = await createChannel(url);
  const target = forwardTo ?? `${app.url}/webhooks`;
  const recorder = await ListenRecorder.open({ forwardTo: target, log: false, channel: channel.channel, channelUrl: channel.url, ...(secret ? { secret } : {}), ...(maxBodyBytes ? { maxBodyBytes } : {}) });
  cleanups.push(() => recorder.close());
  const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: target, ...(secret ? { secret } : {}) });
  cleanups.push(() => listener.close());
  recorder.attach(listener);
  const replies: number[] = [];
  listener.on('reply', () => replies.push(1));
  const settled = (n: number) => expect.poll(() => replies.length).toBe(n);
  return { app, recorder, channel, settled };
}

describe('ListenRecorder', () => {
  it('records the request as sent (headers, bytes) and the reply as the sender got it, live: pending first, then answered', async () => {
    const { recorder, channel, settled } = await setup({ secret: SECRET });
    const seen: string[] = [];
    recorder.on('exchange', (summary) => seen.push(summary.outcome));
    const body = eventText(7);
    await fetch(`${channel.url}/extra?q=1`, { method: 'POST', body, headers: signedHeaders(body, 'dlv_rec_1') });
    await settled(1);
    expect(seen).toEqual(['pending', '2xx']);
    const [summary] = recorder.list();
    expect(summary).toMatchObject({ id: 1, eventName: 'video.completed', deliveryId: 'dlv_rec_1', videoId: '7', status: 200, outcome: '2xx', signatureValid: true, resigned: false });
    expect(summary!.url).toMatch(/\/webhooks\/extra\?q=1$/);
    const detail = recorder.detail(1)!;
    expect(detail.request.body.text).toBe(body);
    expect(detail.seq).toBe(1);
    expect(detail.channel).toBe(channel.channel);
    const names = detail.request.headers.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    expect(names).toEqual(expect.arrayContaining(['content-type', 'x-service-event', 'x-service-delivery', 'x-service-signature']));
    expect(names).not.toContain('host');
    expect(detail.reply).toMatchObject({ status: 200, body: { text: '{"received":true,"n":1}' } });
    expect(detail.reply!.headers).toEqual(expect.arrayContaining(['x-app', 'recording']));
  });

  it("records listen's own refusals, an app that is down, and keeps only maxBodyBytes of a body", async () => {
    const { recorder, channel, settled } = await setup({ secret: SECRET, maxBodyBytes: 64 });
    const body = eventText(8);
    await fetch(channel.url, { method: 'POST', body, headers: { ...signedHeaders(body, 'dlv_forged'), 'x-service-signature': sign(body, 'whsec_guess') } });
    await settled(1);
    // The video id of a body kept truncated is read from the whole body when it is recorded.
    expect(recorder.list()[0]).toMatchObject({ status: 401, refused: 'invalid_signature', signatureValid: false, outcome: '4xx', videoId: '8' });
    // The reply is bounded the same way: listen's problem body, its first 64 bytes.
    expect(recorder.detail(1)!.reply!.body).toMatchObject({ truncated: true, text: expect.stringContaining('urn:cliphook:problem:invalid_signature') });
    expect(recorder.detail(1)!.request.body).toMatchObject({ size: Buffer.byteLength(body), truncated: true });
    expect(Buffer.from(recorder.detail(1)!.request.body.base64, 'base64').toString()).toBe(Buffer.from(body).subarray(0, 64).toString());

    const dead = await listen(() => undefined);
    await dead.close();
    const down = await setup({ forwardTo: dead.url });
    await fetch(down.channel.url, { method: 'POST', body: '{}' });
    await down.settled(1);
    expect(down.recorder.list()[0]).toMatchObject({ status: null, outcome: 'error', errorCode: 'local_unreachable' });
  });

  it('replays the same bytes and headers; with edits, a fresh delivered_at and a signature made with --secret', async () => {
    const { app, recorder, channel, settled } = await setup({ secret: SECRET });
    const body = eventText(9, { deliveredAt: '2026-11-21T12:00:00.000Z' });
    await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_rec_3') });
    await settled(1);
    const plain = await recorder.replay(1);
    expect(plain).toMatchObject({ id: 2, replayOf: 1, edited: false, status: 200, deliveryId: 'dlv_rec_3' });
    expect(app.received[1]!.body.equals(app.received[0]!.body)).toBe(true);
    expect(app.header(1, 'x-service-signature')).toBe(app.header(0, 'x-service-signature'));
    expect(app.received[1]!.url).toBe(app.received[0]!.url);

    const edited = await recorder.replay(1, { body: body.replace('"duration":10', '"duration":15'), freshDeliveredAt: true });
    expect(edited).toMatchObject({ id: 3, replayOf: 1, edited: true, signatureValid: true });
    const sent = app.received[2]!.body;
    expect(sent.toString()).toContain('"duration":15');
    expect(sent.toString()).not.toContain('2026-11-21T12:00:00.000Z');
    expect(app.header(2, 'x-service-signature')).toBe(sign(sent, SECRET));
    // Replays are rows of their own, with what was sent.
    expect(Buffer.from(recorder.detail(3)!.request.body.base64, 'base64').equals(sent)).toBe(true);
  });

  it('without --secret, an edited replay goes with the old signature, and its signature is shown as not checked', async () => {
    const { app, recorder, channel, settled } = await setup();
    const body = eventText(10);
    await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_rec_4') });
    await settled(1);
    const edited = await recorder.replay(1, { body: `${body} ` });
    expect(edited.signatureValid).toBeNull();
    expect(app.header(1, 'x-service-signature')).toBe(sign(body, SECRET));
  });

  it('withDeliveredAt rewrites only the top-level delivered_at', () => {
    const now = Date.parse('2027-01-02T03:04:05.678Z');
    const body = Buffer.from('{"nested":{"delivered_at":"x"},"delivered_at":"2026-01-01T00:00:00Z","n":90071992547409931234}');
    expect(withDeliveredAt(body, now).toString()).toBe('{"nested":{"delivered_at":"x"},"delivered_at":"2027-01-02T03:04:05.678Z","n":90071992547409931234}');
    expect(withDeliveredAt(Buffer.from('{"a":1}'), now).toString()).toBe('{"a":1}');
  });
});
