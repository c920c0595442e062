import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer, RelayError, type Listener, type RelayServer } from 'cliphook';
import { eventText, listen, manualScheduler, signedHeaders, startLocalApp, testdir, type LocalApp } from '../relay/fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: Parameters<typeof createRelayServer>[0] = {}) {
  const app = await startLocalApp();
  cleanups.push(app.close);
  const relay = createRelayServer({ file: false, ...options });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const channel = await createChannel(url);
  return { app, relay, relayUrl: url, channel };
}

async function listenTo(relayUrl: string, channel: { channel: string; token: string }, forwardTo: string, extra: object = {}): Promise<Listener> {
  const listener = await connectListener({ relayUrl, ...channel, forwardTo, reconnect: { minTimeout: 1, maxTimeout: 5 }, ...extra });
  cleanups.push(() => listener.close());
  return listener;
}

function post(url: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url, { method: 'POST', body, headers });
}

describe('relay + listen → a real Express app with receiver.express()', () => {
  it('delivers the exact bytes, so the signature verifies: non-ASCII, escaped slashes, ints above 2^53, 900 KiB', async () => {
    const { app, relayUrl, channel } = await setup();
    await listenTo(relayUrl, channel, `${app.url}/webhooks`);
    const small = eventText(1);
    const large = eventText(2, { padTo: 900 * 1024 });
    for (const [body, id] of [[small, 'dlv_small'], [large, 'dlv_large']] as const) {
      const res = await post(channel.url, body, signedHeaders(body, id));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ received: true });
    }
    expect(app.handled).toHaveLength(2);
    expect(Buffer.from(app.handled[0]!.context.rawBody).equals(Buffer.from(small))).toBe(true);
    expect(Buffer.from(app.handled[1]!.context.rawBody).equals(Buffer.from(large))).toBe(true);
    expect(app.handled[1]!.context.rawBody.byteLength).toBe(900 * 1024);
    expect(small).toContain('90071992547409931234');
  });

  it('brings the local status, headers and body back to the sender: 200, 204, 410, 500', async () => {
    const { app, relayUrl, channel } = await setup();
    await listenTo(relayUrl, channel, app.url);
    for (const status of [200, 204, 410, 500]) {
      const res = await post(`${channel.url}/status/${status}`, '{}');
      expect(res.status).toBe(status);
      expect(res.headers.get('x-local')).toBe('yes');
      expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
      expect(await res.text()).toBe(status === 204 ? '' : `{"status":${status}}`);
    }
  });

  it('keeps method, extra path, query and end-to-end headers (repeats in order); drops hop-by-hop ones', async () => {
    const { app, relayUrl, channel } = await setup();
    await listenTo(relayUrl, channel, `${app.url}/echo`, { methods: ['POST', 'PUT'] });
    const target = new URL(`${channel.url}/a/b%20c?x=1&y=%2F&x=2`);
    const headers = [
      'Host', target.host, 'X-Multi', 'one', 'x-multi', 'two', 'Connection', 'keep-alive, X-Private', 'X-Private', 'secret',
      'Proxy-Authorization', 'Basic abc', 'Keep-Alive', 'timeout=5', 'TE', 'trailers', 'X-Last', 'ü-latin1'.replace('ü', 'u'),
      'Content-Length', '5',
    ];
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(target, { method: 'PUT', headers }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('hello');
    });
    expect(status).toBe(200);
    const echo = app.echoes[0]!;
    expect(echo.method).toBe('PUT');
    expect(echo.url).toBe('/echo/a/b%20c?x=1&y=%2F&x=2');
    expect(echo.body.toString()).toBe('hello');
    const names = echo.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    expect(names).not.toContain('x-private');
    expect(names).not.toContain('proxy-authorization');
    expect(names).not.toContain('te');
    expect(names).not.toContain('keep-alive');
    const pairs = [];
    for (let i = 0; i < echo.rawHeaders.length; i += 2) pairs.push(`${echo.rawHeaders[i]}: ${echo.rawHeaders[i + 1]}`);
    expect(pairs.filter((line) => /^x-/i.test(line))).toEqual(['X-Multi: one', 'x-multi: two', 'X-Last: u-latin1']);
    expect(pairs).toContain('Content-Length: 5');
  });

  it('answers 413 above the body cap and 404 for an unknown channel; replies may still be larger', async () => {
    const { app, relayUrl, channel } = await setup({ maxBodyBytes: 1000 });
    expect((await post(channel.url, 'x'.repeat(1001))).status).toBe(413);
    await listenTo(relayUrl, channel, `${app.url}/big`);
    const big = await post(channel.url, 'small');
    expect(big.status).toBe(200);
    expect((await big.text()).length).toBe(100 * 1024);
    const res = await post(`${relayUrl}/in/AAAAAAAAAAAAAAAAAAAAAAAA`, '{}');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).code).toBe('not_found');
  });

  it('gives 502 local_unreachable when the local app is down and 504 local_timeout when it is too slow', async () => {
    const scheduler = manualScheduler();
    const { relayUrl, channel } = await setup({ scheduler });
    const dead = await listen(() => undefined);
    await dead.close();
    const listener = await listenTo(relayUrl, channel, dead.url);
    const down = await post(channel.url, '{}');
    expect(down.status).toBe(502);
    expect((await down.json()).code).toBe('local_unreachable');
    await listener.close();

    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const slow = await listen((req) => {
      req.resume();
      arrived(); // never answers
    });
    cleanups.push(slow.close);
    await listenTo(relayUrl, channel, slow.url);
    const pending = post(channel.url, '{}');
    await reached;
    scheduler.fireTimeouts();
    const timedOut = await pending;
    expect(timedOut.status).toBe(504);
    expect((await timedOut.json()).code).toBe('local_timeout');
  });

  it('buffers while no listener is connected (503 no_listener + Retry-After), then catches up in order', async () => {
    const { app, relayUrl, channel } = await setup({ retryAfterSeconds: 7 });
    for (let id = 1; id <= 5; id++) {
      const body = eventText(id);
      const res = await post(channel.url, body, signedHeaders(body, `dlv_${id}`));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('7');
      expect((await res.json()).code).toBe('no_listener');
    }
    const listener = await listenTo(relayUrl, channel, `${app.url}/webhooks`);
    // Handlers attached after connectListener resolves still see every caught-up event.
    const seen: number[] = [];
    listener.on('event', (event) => seen.push(event.seq));
    await new Promise<void>((resolve) => listener.on('reply', () => app.handled.length === 5 && resolve()));
    expect(app.handled.map(({ event }) => event.id)).toEqual([1, 2, 3, 4, 5]);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });

  it('sends every event to every listener of a channel; the sender gets the first reply', async () => {
    const { app, relayUrl, channel } = await setup();
    const other = await startLocalApp();
    cleanups.push(other.close);
    await listenTo(relayUrl, channel, `${app.url}/webhooks`);
    const second = await listenTo(relayUrl, channel, `${other.url}/webhooks`);
    const secondDone = new Promise<void>((resolve) => second.once('reply', () => resolve()));
    const body = eventText(7);
    const res = await post(channel.url, body, signedHeaders(body, 'dlv_7'));
    expect(res.status).toBe(200);
    await secondDone;
    expect(app.handled).toHaveLength(1);
    expect(other.handled).toHaveLength(1);
  });

  it('answers with the first reply when another listener hangs or cannot reach its app', async () => {
    const { app, relayUrl, channel } = await setup({ scheduler: manualScheduler() }); // reply timeouts never fire
    const hanging = await listen((req) => req.resume()); // takes the request, never answers
    cleanups.push(hanging.close);
    const down = await listen(() => undefined);
    await down.close();
    await listenTo(relayUrl, channel, hanging.url);
    await listenTo(relayUrl, channel, down.url);
    await listenTo(relayUrl, channel, `${app.url}/status/201`);
    const res = await post(channel.url, '{}');
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('{"status":201}');
  });

  it('serves on an existing HTTP server with attach(), for any method the listener allows', async () => {
    const app = await startLocalApp();
    cleanups.push(app.close);
    const relay = createRelayServer({ file: false });
    const server = await listen((_req, res) => res.writeHead(500).end()); // replaced by attach below
    server.server.removeAllListeners('request');
    cleanups.push(server.close);
    cleanups.push(() => relay.close());
    await relay.attach(server.server);
    const channel = await createChannel(server.url);
    await listenTo(server.url, channel, `${app.url}/echo`, { methods: ['GET'] });
    const res = await fetch(`${channel.url}/x?y=1`, { method: 'GET' });
    expect(res.status).toBe(200);
    expect(app.echoes[0]).toMatchObject({ method: 'GET', url: '/echo/x?y=1' });
    expect(app.echoes[0]!.body.length).toBe(0);
  });

  it('refuses a wrong token and an unknown channel with typed errors', async () => {
    const { app, relayUrl, channel } = await setup();
    const wrong = connectListener({ relayUrl, channel: channel.channel, token: 'clt_wrong', forwardTo: app.url });
    await expect(wrong).rejects.toMatchObject({ name: 'RelayError', code: 'invalid_token', status: 401 });
    const unknown = connectListener({ relayUrl, channel: 'nope', token: channel.token, forwardTo: app.url });
    await expect(unknown).rejects.toBeInstanceOf(RelayError);
    await expect(unknown).rejects.toMatchObject({ code: 'channel_not_found', status: 404 });
  });

  it('keeps channels and the buffer across a relay restart', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const app = await startLocalApp();
    cleanups.push(app.close);
    const file = `${dir}/relay.json`;
    const first = createRelayServer({ file });
    const { url } = await first.listen(0, '127.0.0.1');
    const channel = await createChannel(url);
    const body = eventText(11);
    expect((await post(channel.url, body, signedHeaders(body, 'dlv_11'))).status).toBe(503);
    await first.close();

    const second = createRelayServer({ file });
    const { url: secondUrl } = await second.listen(0, '127.0.0.1');
    cleanups.push(() => second.close());
    const listener = await listenTo(secondUrl, channel, `${app.url}/webhooks`);
    await new Promise<void>((resolve) => listener.once('reply', () => resolve()));
    expect(app.handled.map(({ event }) => event.id)).toEqual([11]);
    expect(Buffer.from(app.handled[0]!.context.rawBody).toString()).toBe(body);
  });

  it('guards channel creation with the admin token when one is set', async () => {
    const relay = createRelayServer({ file: false, adminToken: 'adm_secret' });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    await expect(createChannel(url)).rejects.toMatchObject({ code: 'admin_token_required' });
    const created = await createChannel(url, { adminToken: 'adm_secret' });
    expect(created.channel).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(created.url).toBe(`${url}/in/${created.channel}`);
  });

  it('answers GET /healthz', async () => {
    const { relayUrl } = await setup();
    const res = await fetch(`${relayUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok', channels: 1, listeners: 0 });
  });
});
