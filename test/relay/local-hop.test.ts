// What one event's trip to the local app reports: the request headers as sent and the reply's headers and
// body as the sender gets them, which the inspector (issue 14) shows.
import { afterEach, describe, expect, it } from 'vitest';
import { sign } from 'cliphook';
import type { EventFrame } from '../../src/relay/frames.js';
import { createForwarder } from '../../src/relay/forward.js';
import { resolveListenerOptions } from '../../src/relay/listener-options.js';
import { LocalHop } from '../../src/relay/local-hop.js';
import { eventText, listen, SECRET, signedHeaders, startLocalApp } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function hopTo(forwardTo: string, extra: { secret?: string } = {}) {
  const options = resolveListenerOptions({ relayUrl: 'http://127.0.0.1:1', channel: 'c', token: 't', forwardTo, ...extra });
  const forwarder = createForwarder(options.forwardTo, 2_000, 1024 * 1024);
  cleanups.push(async () => forwarder.close());
  return new LocalHop(options, forwarder);
}

const frame = (body: string, headers: string[], path = ''): EventFrame => ({
  type: 'event', seq: 7, receivedAt: 1_763_769_541_000, method: 'POST', path, query: '', headers, body: Buffer.from(body), backlog: false, replay: false,
});

describe('LocalHop: what the inspector is given', () => {
  it("carries the request's headers and receivedAt on the event, and the local reply's headers and body on the reply", async () => {
    const app = await startLocalApp();
    cleanups.push(app.close);
    const hop = hopTo(app.url);
    const prepared = hop.prepare(frame('{"a":1}', ['Content-Type', 'application/json', 'X-Service-Event', 'video.completed'], '/status/410'));
    expect(prepared.event).toMatchObject({ seq: 7, receivedAt: 1_763_769_541_000, headers: ['Content-Type', 'application/json', 'X-Service-Event', 'video.completed'] });
    const { reply } = await hop.answer(prepared);
    expect(reply.status).toBe(410);
    expect(reply.body.toString()).toBe('{"status":410}');
    const names = reply.headers.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    expect(names).toContain('x-local');
    expect(reply.headers.filter((value, i) => i % 2 === 1 && /^[ab]=/.test(value))).toEqual(['a=1', 'b=2']);
  });

  it("gives listen's own refusal as the reply's headers and problem body, and an empty reply when the app is down", async () => {
    const app = await startLocalApp();
    cleanups.push(app.close);
    const body = eventText(1);
    const refused = await hopTo(app.url, { secret: SECRET }).answer(
      hopTo(app.url, { secret: SECRET }).prepare(frame(body, Object.entries({ ...signedHeaders(body, 'dlv_x'), 'x-service-signature': sign(body, 'whsec_other') }).flat())),
    );
    expect(refused.reply.status).toBe(401);
    expect(refused.reply.headers.slice(0, 2)).toEqual(['content-type', 'application/problem+json']);
    expect(JSON.parse(refused.reply.body.toString())).toMatchObject({ code: 'invalid_signature' });

    const dead = await listen(() => undefined);
    await dead.close();
    const down = await hopTo(dead.url).answer(hopTo(dead.url).prepare(frame('{}', [])));
    expect(down.reply).toMatchObject({ status: null, headers: [], error: { code: 'local_unreachable' } });
    expect(down.reply.body.length).toBe(0);
  });

  it('shows the re-signed bytes and signature header when it re-signs a caught-up event', async () => {
    const app = await startLocalApp();
    cleanups.push(app.close);
    const old = new Date(Date.now() - 3_600_000).toISOString();
    const body = eventText(2, { deliveredAt: old });
    const caughtUp = { ...frame(body, Object.entries(signedHeaders(body, 'dlv_old')).flat()), receivedAt: Date.parse(old), backlog: true };
    const { event } = hopTo(app.url, { secret: SECRET }).prepare(caughtUp);
    expect(event.resigned).toBe(true);
    const signature = event.headers[event.headers.findIndex((name) => name.toLowerCase() === 'x-service-signature') + 1];
    expect(signature).toBe(sign(event.body, SECRET));
    expect(signature).not.toBe(sign(body, SECRET));
  });
});
