import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { connectListener, createChannel, createRelayServer, Listener } from 'cliphook';
import { reconnectDelay } from '../../src/relay/backoff.js';
import { encodeFrame, type EventFrame } from '../../src/relay/frames.js';
import { targetUrl } from '../../src/relay/forward.js';
import { listen, manualScheduler, startLocalApp } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const base = { relayUrl: 'http://127.0.0.1:1', channel: 'c', token: 't', forwardTo: 'http://localhost:3000/webhooks' };

describe('connectListener options', () => {
  it('throws a TypeError naming the bad option', () => {
    expect(() => new Listener({ ...base, relayUrl: 'nope' })).toThrow(/`relayUrl`/);
    expect(() => new Listener({ ...base, forwardTo: 'ftp://x' })).toThrow(/`forwardTo`/);
    expect(() => new Listener({ ...base, token: '' })).toThrow(/`token`/);
    expect(() => new Listener({ ...base, secret: '' })).toThrow(/`secret`/);
    expect(() => new Listener({ ...base, events: ['bad name'] })).toThrow(/`events`/);
    expect(() => new Listener({ ...base, localTimeoutMs: 0 })).toThrow(/`localTimeoutMs`/);
    expect(() => new Listener({ ...base, reconnect: { minTimeout: 10, maxTimeout: 5 } })).toThrow(/`reconnect`/);
    expect(() => new Listener({ ...base, pingIntervalMs: 5000, readDeadlineMs: 5000 })).toThrow(/`readDeadlineMs`/);
  });

  it('builds the ws endpoint and the local URL', () => {
    expect(new Listener({ ...base, relayUrl: 'https://relay.example.com/', events: ['video.failed'] }).endpoint).toBe(
      'wss://relay.example.com/channels/c/listen?events=video.failed',
    );
    expect(targetUrl(new URL('http://localhost:3000/webhooks?a=1'), { path: '/x/y', query: '?b=2' }).href).toBe('http://localhost:3000/webhooks/x/y?a=1&b=2');
    expect(targetUrl(new URL('http://localhost:3000/'), { path: '', query: '' }).href).toBe('http://localhost:3000/');
  });
});

describe('listener liveness and reconnects', () => {
  it('notices a silent relay past its read deadline, says it is reconnecting, and reconnects', async () => {
    const relay = createRelayServer({ file: false });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(url);
    let now = 0;
    const scheduler = manualScheduler();
    const listener = await connectListener({
      relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: app.url,
      clock: () => now, scheduler, pingIntervalMs: 10_000, readDeadlineMs: 20_000, reconnect: { minTimeout: 1, maxTimeout: 2 },
    });
    cleanups.push(() => listener.close());
    const reconnecting = new Promise((resolve) => listener.once('reconnecting', resolve));
    const reconnected = new Promise((resolve) => listener.once('connected', resolve));
    now = 20_001; // nothing heard from the relay since t=0
    scheduler.tick();
    expect(await reconnecting).toMatchObject({ attempt: 0 });
    await reconnected;
    // The new connection carries events: the sender gets the local app's own answer, not 503.
    expect((await fetch(channel.url, { method: 'POST', body: '{}' })).status).toBe(404);
  });

  it('keeps retrying while the relay is down, with one reconnecting report per attempt', async () => {
    const relay = createRelayServer({ file: false });
    const { url } = await relay.listen(0, '127.0.0.1');
    await relay.close();
    const listener = new Listener({ ...base, relayUrl: url, reconnect: { minTimeout: 1, maxTimeout: 2 } });
    const attempts: number[] = [];
    const three = new Promise<void>((resolve) =>
      listener.on('reconnecting', ({ attempt }) => {
        attempts.push(attempt);
        if (attempts.length === 3) resolve();
      }),
    );
    const running = listener.run();
    await three;
    await listener.close();
    await running;
    expect(attempts.slice(0, 3)).toEqual([1, 2, 3]);
    expect(await listener.closed).toBeNull();
  });
});

describe('replies the relay would refuse, and the backoff', () => {
  it('sends a fail, not a reply the relay would close the socket over (600 Set-Cookie headers)', async () => {
    const relay = createRelayServer({ file: false });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    let hits = 0;
    const app = await listen((req, res) => {
      hits++;
      req.resume();
      const headers: string[] = [];
      for (let i = 0; i < 600; i++) headers.push('Set-Cookie', `c${i}=1`);
      res.writeHead(200, headers);
      res.end('x');
    });
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: app.url });
    cleanups.push(() => listener.close());
    const reconnects: unknown[] = [];
    listener.on('reconnecting', (info) => reconnects.push(info));
    const replied = new Promise<{ status: number | null; error: { code: string; detail: string } | null }>((resolve) => listener.once('reply', resolve));
    const res = await fetch(channel.url, { method: 'POST', body: '{}' });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { code: string }).code).toBe('local_unreachable');
    expect((await replied).error).toMatchObject({ code: 'local_unreachable', detail: expect.stringMatching(/cannot be relayed/) });
    expect(hits).toBe(1);
    expect(reconnects).toEqual([]);
    expect(relay.listeners).toBe(1);
  });

  it('computes the wait as p-retry does: growing, capped, jittered 1-2x', () => {
    const options = { minTimeout: 100, maxTimeout: 1000, factor: 2, randomize: false };
    expect([1, 2, 3, 4, 5].map((n) => reconnectDelay(n, options))).toEqual([100, 200, 400, 800, 1000]);
    expect(reconnectDelay(2, { ...options, randomize: true }, () => 0.5)).toBe(300);
  });

  it('backs off across sessions after 1008/1009/1011 and short sessions; a healthy one (5 s up, or a pong) starts it over, at once only after 5 s or an event', async () => {
    // A relay that says hello, then closes each connection with the next code the test gives it. It answers
    // pings only when the test says so, so a session proves itself by time alone unless told otherwise.
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', autoPong: false });
    await new Promise((resolve) => wss.once('listening', resolve));
    cleanups.push(() => new Promise((resolve) => wss.close(resolve)));
    const sockets: import('ws').WebSocket[] = [];
    let connections = 0;
    let answerPings = false;
    wss.on('connection', (socket) => {
      connections++;
      sockets.push(socket);
      socket.on('ping', () => answerPings && socket.pong());
      socket.send(JSON.stringify({ type: 'hello', channel: 'c', listener: `l${connections}`, pingIntervalMs: 10_000 }));
    });
    let now = 0;
    const scheduler = manualScheduler();
    const listener = new Listener({
      ...base,
      relayUrl: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
      clock: () => now,
      scheduler,
      reconnect: { minTimeout: 5, maxTimeout: 40, factor: 2, randomize: false },
    });
    const delays: number[] = [];
    const connected = () => new Promise<void>((resolve) => listener.once('connected', () => resolve()));
    const closedWith = async (code: number, upMs: number) => {
      const reported = new Promise<void>((resolve) => listener.once('reconnecting', ({ delayMs }) => (delays.push(delayMs), resolve())));
      now += upMs;
      if (code === 1006) sockets.at(-1)!.terminate(); // a dropped connection
      else sockets.at(-1)!.close(code);
      await reported;
    };
    let next = connected();
    const running = listener.run();
    cleanups.push(async () => (await listener.close(), await running));
    await next;
    for (const [code, upMs] of [[1008, 60_000], [1009, 0], [1011, 0], [1000, 0], [1006, 10]] as const) {
      next = connected();
      await closedWith(code, upMs);
      await next;
    }
    // A refused reply waits even after a long session; short sessions keep growing the wait.
    expect(delays).toEqual([5, 10, 20, 40, 40]);
    next = connected();
    await closedWith(1006, 5_000); // up 5 s after the hello: healthy, so the next reconnect is at once
    await next;
    next = connected();
    await closedWith(1000, 0);
    await next;
    expect(delays.slice(5)).toEqual([0, 5]);
    // A relay that answers the ping sent on its hello proves the connection at once (issue 10: cut after cut
    // on a flaky network must not grow the wait against a healthy relay).
    answerPings = true;
    for (let cut = 0; cut < 3; cut++) {
      const pinged = new Promise<void>((resolve) => sockets.at(-1)!.once('ping', () => resolve()));
      scheduler.tick(); // the heartbeat pings now
      await pinged;
      // The listener answers our ping after reading the pong sent before it: then the pong has arrived.
      const back = new Promise((resolve) => sockets.at(-1)!.once('pong', resolve));
      sockets.at(-1)!.ping();
      await back;
      next = connected();
      await closedWith(1006, 0);
      await next;
    }
    // Healthy, so the wait starts over, but not at 0: a relay (or middlebox) that says hello, answers the
    // ping and drops would otherwise cost a handshake and a catch-up in a tight loop. The shortest wait, every time.
    expect(delays.slice(7)).toEqual([5, 5, 5]);
    // One that carried an event is worth reconnecting to at once.
    const answered = new Promise((resolve) => listener.once('reply', resolve));
    const event: EventFrame = { type: 'event', seq: 1, receivedAt: 0, method: 'GET', path: '', query: '', headers: [], body: Buffer.alloc(0), backlog: false, replay: false };
    sockets.at(-1)!.send(encodeFrame(event)); // answered 405 by the listener itself: nothing to forward
    await answered;
    const pinged = new Promise<void>((resolve) => sockets.at(-1)!.once('ping', () => resolve()));
    scheduler.tick();
    await pinged;
    const back = new Promise((resolve) => sockets.at(-1)!.once('pong', resolve));
    sockets.at(-1)!.ping();
    await back;
    next = connected();
    await closedWith(1006, 0);
    await next;
    expect(delays.slice(10)).toEqual([0]);
    expect(connections).toBe(12);
  });
});

describe('replies and their socket', () => {
  it('drops a reply whose socket is gone instead of sending it on the next connection', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => wss.once('listening', resolve));
    cleanups.push(() => new Promise((resolve) => wss.close(resolve)));
    const received: Array<{ connection: number; text: string }> = [];
    const sockets: import('ws').WebSocket[] = [];
    const arrivals: Array<() => void> = [];
    wss.on('connection', (socket) => {
      const connection = sockets.push(socket);
      socket.on('message', (data, isBinary) => {
        received.push({ connection, text: isBinary ? 'binary' : String(data) });
        arrivals.shift()?.();
      });
      socket.send(JSON.stringify({ type: 'hello', channel: 'c', listener: `l${connection}`, pingIntervalMs: 10_000 }));
    });
    // A local app that holds its answer until the test releases it.
    let answer: () => void = () => undefined;
    let onAsked: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => (onAsked = resolve));
    const app = await listen((req, res) => {
      req.resume();
      answer = () => res.end('ok');
      onAsked();
    });
    cleanups.push(app.close);
    const listener = await connectListener({
      ...base,
      relayUrl: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
      forwardTo: app.url,
      reconnect: { minTimeout: 1, maxTimeout: 1, randomize: false },
    });
    cleanups.push(() => listener.close());
    const event: EventFrame = { type: 'event', seq: 1, receivedAt: 0, method: 'POST', path: '', query: '', headers: [], body: Buffer.from('{}'), backlog: false, replay: false };
    sockets[0]!.send(encodeFrame(event));
    await asked; // the local app has the event; its socket now drops
    const reconnected = new Promise((resolve) => listener.once('connected', resolve));
    sockets[0]!.terminate();
    await reconnected;
    const replied = new Promise((resolve) => listener.once('reply', resolve));
    answer();
    await replied;
    // Whatever the listener sends next on the new socket comes after the reply it would have sent.
    const arrived = new Promise<void>((resolve) => arrivals.push(resolve));
    void listener.replay('marker');
    await arrived;
    expect(received).toEqual([{ connection: 2, text: '{"type":"replay","ref":"marker"}' }]);
  });
});
