import fc from 'fast-check';
import WebSocket from 'ws';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectListener, createChannel, createRelayServer, Listener, type ChannelInfo, type RelayServer } from 'cliphook';
import { eventText, listen, manualScheduler, rawRequest, signedHeaders, startLocalApp } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startRelay(options: Parameters<typeof createRelayServer>[0] = {}): Promise<{ relay: RelayServer; url: string }> {
  const relay = createRelayServer({ file: false, ...options });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  return { relay, url };
}

/** A bare WebSocket to a channel, as a hand-written or hostile listener would open it. */
function rawSocket(url: string, channel: ChannelInfo, options: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}/channels/${channel.channel}/listen`, { headers: { authorization: `Bearer ${channel.token}` }, ...options });
  socket.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    socket.once('message', () => resolve(socket)); // the hello frame
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

function closeCode(socket: WebSocket): Promise<number> {
  return new Promise((resolve) => socket.once('close', (code) => resolve(code)));
}

describe('createRelayServer options', () => {
  it('throws a TypeError naming the bad option', () => {
    expect(() => createRelayServer({ maxBodyBytes: -1 })).toThrow(/`maxBodyBytes`/);
    expect(() => createRelayServer({ publicUrl: 'ftp://x' })).toThrow(/`publicUrl`/);
    expect(() => createRelayServer({ responseTimeoutMs: 1.5 })).toThrow(/`responseTimeoutMs`/);
    expect(() => createRelayServer({ pingIntervalMs: 10_000, readDeadlineMs: 5_000 })).toThrow(/`readDeadlineMs`/);
    expect(() => createRelayServer({ adminToken: '' })).toThrow(/`adminToken`/);
    expect(() => createRelayServer({ file: '' })).toThrow(/`file`/);
    expect(() => createRelayServer({ clock: 5 as never })).toThrow(/`clock`/);
  });

  it('keeps its state in Redis or in the data file, never both, and checks the Redis options before connecting', () => {
    const redisUrl = 'redis://127.0.0.1:1';
    expect(() => createRelayServer({ redisUrl, file: '.cliphook/relay.json' })).toThrow(/either `file` or `redis`\/`redisUrl`/);
    expect(() => createRelayServer({ redisUrl, file: false })).toThrow(/`file`/);
    expect(() => createRelayServer({ redisUrl, fileIo: {} as never })).toThrow(/`fileIo`/);
    expect(() => createRelayServer({ redisUrl: 'http://127.0.0.1:6379' })).toThrow(/`redisUrl` to be a redis:\/\/ or rediss:\/\/ URL/);
    expect(() => createRelayServer({ redis: {} as never })).toThrow(/`redis` to be an ioredis client/);
    expect(() => createRelayServer({ redis: { duplicate() {}, callBuffer() {} } as never, redisUrl })).toThrow(/not both/);
    expect(() => createRelayServer({ redisPrefix: 'mine:' })).toThrow(/`redisPrefix` only with/);
    expect(() => createRelayServer({ redisUrl, redisPrefix: '' })).toThrow(/`redisPrefix`/);
    // Nothing connects before open(): a relay made with a URL nobody answers at is only an object.
    expect(createRelayServer({ redisUrl, redisPrefix: 'mine:' }).listeners).toBe(0);
  });
});

describe('relay server', () => {
  it('answers 405 for a wrong method on /channels and 404 elsewhere', async () => {
    const { url } = await startRelay();
    const res = await fetch(`${url}/channels`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect((await fetch(`${url}/nothing`)).status).toBe(404);
  });

  it('closes a malformed frame with 1008 and an oversized one with 1009, leaving other channels alone', async () => {
    const { url } = await startRelay({ maxBodyBytes: 1000 });
    const app = await startLocalApp();
    cleanups.push(app.close);
    const [bad, good] = [await createChannel(url), await createChannel(url)];
    const listener = await connectListener({ relayUrl: url, channel: good.channel, token: good.token, forwardTo: `${app.url}/webhooks` });
    cleanups.push(() => listener.close());

    const malformed = await rawSocket(url, bad);
    const malformedClosed = closeCode(malformed);
    malformed.send('{"type":"reply","seq":"one"}');
    expect(await malformedClosed).toBe(1008);

    const oversized = await rawSocket(url, bad);
    const oversizedClosed = closeCode(oversized);
    oversized.send(JSON.stringify({ type: 'replay', ref: 'x'.repeat(2 * 1024 * 1024) }));
    expect(await oversizedClosed).toBe(1009);

    const body = eventText(1);
    expect((await fetch(good.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_1') })).status).toBe(200);
  });

  it('survives fuzzed frames: each bad one closes only its own socket', async () => {
    const { relay, url } = await startRelay();
    const target = await createChannel(url);
    const app = await startLocalApp();
    cleanups.push(app.close);
    const other = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: other.channel, token: other.token, forwardTo: `${app.url}/webhooks` });
    cleanups.push(() => listener.close());
    const head = fc
      .record(
        {
          type: fc.constantFrom('reply', 'fail', 'replay', 'hello', 'event', '__proto__', 'constructor'),
          seq: fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null)),
          status: fc.oneof(fc.integer({ min: -10, max: 1000 }), fc.string()),
          headers: fc.oneof(fc.array(fc.string(), { maxLength: 6 }), fc.string(), fc.anything()),
          body: fc.oneof(fc.base64String(), fc.string(), fc.anything()),
          code: fc.oneof(fc.constantFrom('local_unreachable', 'local_timeout'), fc.string()),
          ref: fc.oneof(fc.string(), fc.integer(), fc.anything()),
        },
        { requiredKeys: ['type'] },
      )
      .map((value) => JSON.stringify(value) ?? '{}');
    // Binary frames: a head length (true or not), a JSON head and any body bytes.
    const binary = fc.tuple(head, fc.uint8Array({ maxLength: 64 }), fc.boolean()).map(([json, body, honest]) => {
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32BE(honest ? Buffer.byteLength(json) : Buffer.byteLength(json) + body.length + 1);
      return Buffer.concat([prefix, Buffer.from(json), body]);
    });
    const frame = fc.oneof(fc.string(), fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)), fc.json(), head, binary);
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 4 }), async (frames) => {
        const socket = await rawSocket(url, target);
        for (const data of frames) socket.send(data);
        // Whatever the relay made of them, it still answers this socket or has closed it, and serves others.
        const closed = closeCode(socket);
        socket.send('{"type":"replay","ref":"fuzz-end"}');
        await Promise.race([closed, new Promise((resolve) => socket.on('message', resolve))]);
        socket.terminate();
      }),
      { numRuns: 60 },
    );
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const body = eventText(2);
    expect((await fetch(other.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_2') })).status).toBe(200);
    expect(relay.listeners).toBeGreaterThanOrEqual(1);
  });

  it('drops a listener that stays silent past the read deadline and keeps one that talks', async () => {
    let now = 0;
    const scheduler = manualScheduler();
    const { url } = await startRelay({ clock: () => now, scheduler, pingIntervalMs: 10_000, readDeadlineMs: 20_000 });
    const channel = await createChannel(url);
    const silent = await rawSocket(url, channel, { autoPong: false });
    const talking = await rawSocket(url, channel, { autoPong: false });
    const silentClosed = closeCode(silent);
    let talkingClosed = false;
    talking.once('close', () => (talkingClosed = true));

    now = 19_999;
    scheduler.tick(); // within the deadline: pings only
    talking.send('{"type":"replay","ref":"42"}');
    await new Promise((resolve) => talking.once('message', resolve)); // relay heard it at t=19,999
    now = 20_001; // the silent one was last heard at t=0: noticed on this tick, within 30 s of going quiet
    scheduler.tick();
    expect(await silentClosed).toBe(1006);
    expect(talkingClosed).toBe(false);
    talking.terminate();
  });

  it('replays a buffered event by sequence number or delivery id', async () => {
    const { url } = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${app.url}/echo` });
    cleanups.push(() => listener.close());
    const body = eventText(5);
    expect((await fetch(`${channel.url}?n=1`, { method: 'POST', body, headers: signedHeaders(body, 'dlv_5') })).status).toBe(200);
    const bySeq = await listener.replay(1);
    expect(bySeq).toMatchObject({ status: 200, event: { replay: true, deliveryId: 'dlv_5', seq: 1 } });
    const byDelivery = await listener.replay('dlv_5');
    expect(byDelivery?.event.seq).toBe(1);
    expect(await listener.replay('dlv_missing')).toBeNull();
    expect(app.echoes.map((echo) => echo.body.toString())).toEqual([body, body, body]);
    expect(app.echoes[2]!.url).toBe('/echo?n=1');
  });

  it('sends a listener only the events it asked for; the others are answered 202 filtered and not kept', async () => {
    const { relay, url } = await startRelay({ maxBufferedEvents: 5 });
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${app.url}/echo`, events: ['video.failed'] });
    cleanups.push(() => listener.close());
    // More unwanted events than the buffer holds: none is kept, so none crowds out a wanted one.
    for (let i = 0; i < 8; i++) {
      const completed = await fetch(channel.url, { method: 'POST', body: '{}', headers: { 'x-service-event': 'video.completed' } });
      expect(completed.status).toBe(202);
      expect(await completed.json()).toEqual({ relayed: false, reason: 'filtered_by_listener' });
    }
    const failed = await fetch(channel.url, { method: 'POST', body: '{}', headers: { 'x-service-event': 'video.failed' } });
    expect(failed.status).toBe(200);
    expect(app.echoes).toHaveLength(1);
    // With no listener connected, an event is kept and the sender told 503 no_listener, as before.
    await listener.close();
    await vi.waitFor(() => expect(relay.listeners).toBe(0));
    const offline = await fetch(channel.url, { method: 'POST', body: '{}', headers: { 'x-service-event': 'video.completed' } });
    expect(offline.status).toBe(503);
    expect(((await offline.json()) as { code: string }).code).toBe('no_listener');
  });

  it('acknowledges an event answered 502 or 504: the sender owns the retry, the buffer does not fill', async () => {
    const scheduler = manualScheduler();
    const { url } = await startRelay({ maxBufferedEvents: 5, scheduler });
    const down = await startLocalApp();
    await down.close(); // its port now refuses connections
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${down.url}/webhooks` });
    cleanups.push(() => listener.close());
    const post = () => fetch(channel.url, { method: 'POST', body: '{}', headers: { 'x-service-event': 'video.completed' } });
    for (let i = 0; i < 8; i++) {
      const res = await post();
      expect(res.status).toBe(502);
      expect(((await res.json()) as { code: string }).code).toBe('local_unreachable');
    }
    await listener.close();

    // A listener that never answers: 504 once the reply timeout fires, and acknowledged too.
    const silent = await rawSocket(url, channel);
    let frames = 0;
    const fiveArrived = new Promise<void>((resolve) => silent.on('message', () => ++frames === 5 && resolve()));
    const inFlight = Array.from({ length: 5 }, () => post());
    await fiveArrived;
    // The buffer is full of events in flight: 507 relay_full (issue 10), not 503 no_listener.
    const full = await post();
    expect(full.status).toBe(507);
    expect(full.headers.get('retry-after')).toBe('10');
    expect(((await full.json()) as { code: string }).code).toBe('relay_full');
    scheduler.fireTimeouts();
    expect((await Promise.all(inFlight)).map((res) => res.status)).toEqual([504, 504, 504, 504, 504]);
    const next = post();
    await new Promise((resolve) => silent.once('message', resolve));
    scheduler.fireTimeouts();
    expect((await next).status).toBe(504);
    silent.terminate();
  });

  it('passes the extra path and query to the local app byte for byte', async () => {
    const { url } = await startRelay();
    const seen: string[] = [];
    const app = await listen((req, res) => {
      seen.push(req.url!);
      req.resume();
      res.end('ok');
    });
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${app.url}/hook` });
    cleanups.push(() => listener.close());
    // Dot segments, encoded slashes and backslashes are refused (issue 10, test/relay/path-guard.test.ts).
    const targets = ['?', '/a/b?x=1&p=/../x', '/a%20b/c/', "/p|q^{}?q='x'&a=1&a=2&e=%41%2b+", '//double//slash', '/a.b/..c?%2e%2e'];
    for (const rest of targets) {
      const head = await rawRequest(url, `POST /in/${channel.channel}${rest} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
      expect(head).toMatch(/^HTTP\/1\.1 200 /);
    }
    expect(seen).toEqual(targets.map((rest) => `/hook${rest}`));
  });

  it('keeps local error text out of 502 bodies, HEAD Content-Length in, and adds no Content-Length: 0', async () => {
    const { url } = await startRelay();
    const seen: Array<{ method: string; length: string | undefined }> = [];
    const app = await listen((req, res) => {
      seen.push({ method: req.method!, length: req.headers['content-length'] });
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '12345' });
      res.end(req.method === 'HEAD' ? undefined : 'x'.repeat(12345));
    });
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${app.url}/hook`, methods: ['POST', 'HEAD', 'DELETE', 'OPTIONS'] });
    cleanups.push(() => listener.close());
    const head = await rawRequest(url, `HEAD /in/${channel.channel} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head.toLowerCase()).toContain('content-length: 12345\r\n');
    await rawRequest(url, `DELETE /in/${channel.channel} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    await rawRequest(url, `OPTIONS /in/${channel.channel} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    expect(seen).toEqual([
      { method: 'HEAD', length: undefined },
      { method: 'DELETE', length: undefined },
      { method: 'OPTIONS', length: '0' },
    ]);

    await listener.close();
    const down = await startLocalApp();
    await down.close();
    const second = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${down.url}/hook` });
    cleanups.push(() => second.close());
    const failed = new Promise<{ error: { detail: string } | null }>((resolve) => second.once('reply', resolve));
    const res = await fetch(channel.url, { method: 'POST', body: '{}' });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
    // The detail stays with the developer, in listen's own output.
    expect((await failed).error?.detail).toMatch(/ECONNREFUSED/);
  });

  it('rejects replay() when the listener is not connected', async () => {
    const { url } = await startRelay();
    const channel = await createChannel(url);
    const never = new Listener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: 'http://127.0.0.1:9/hook' });
    await expect(never.replay(1)).rejects.toThrow(/not connected/);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: 'http://127.0.0.1:9/hook' });
    await listener.close();
    await expect(listener.replay('dlv_1')).rejects.toThrow(/not connected/);
  });

  it('closes with listeners connected: they are told 1001 and cannot reconnect to the stopping relay', async () => {
    const relay = createRelayServer({ file: false });
    const { url } = await relay.listen(0, '127.0.0.1');
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: app.url, reconnect: { minTimeout: 1, maxTimeout: 2 } });
    cleanups.push(() => listener.close());
    const reports: string[] = [];
    const twice = new Promise<void>((resolve) =>
      listener.on('reconnecting', ({ error }) => {
        reports.push(error.message);
        if (reports.length === 2) resolve();
      }),
    );
    await relay.close();
    await twice;
    expect(reports[0]).toBe('connection closed (1001)');
    expect(relay.listeners).toBe(0);
  });

  it('closes listeners of a deleted channel so `listen` stops with channel_not_found', async () => {
    const { url } = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener: Listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: app.url });
    const wrong = await fetch(`${url}/channels/${channel.channel}`, { method: 'DELETE', headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const res = await fetch(`${url}/channels/${channel.channel}`, { method: 'DELETE', headers: { authorization: `Bearer ${channel.token}` } });
    expect(res.status).toBe(204);
    expect(await listener.closed).toMatchObject({ code: 'channel_not_found' });
    expect((await fetch(channel.url, { method: 'POST', body: '{}' })).status).toBe(404);
  });
});
