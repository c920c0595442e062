import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer, Listener } from 'cliphook';
import { targetUrl } from '../../src/relay/forward.js';
import { manualScheduler, startLocalApp } from './fixtures.js';

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
