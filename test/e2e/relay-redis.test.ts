// Issue 13: several relay processes sharing one Redis. Each relay is a child process (relay-redis.child.ts)
// on 127.0.0.1:0; the listeners are the library's own client, as `cliphook listen` runs it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, type ChannelInfo, type ListenerOptions, type ListenerReply } from 'cliphook';
import { startFailoverProxy } from '../helpers/proxy.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { eventText, listen, signedHeaders, unacked } from '../relay/fixtures.js';

const redis = redisAvailable() ? await startRedis({ persist: true }) : null;
afterAll(() => redis?.stop());

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CHILD = fileURLToPath(new URL('./relay-redis.child.ts', import.meta.url));
/** For what takes a few hops between processes (and ioredis's reconnect backoff, up to 5 s): no timed assertion, only a bound. */
const SOON = { timeout: 15_000 };

interface RelayProcess {
  child: ChildProcess;
  url: string;
  /** Its logger's lines: `info …` and `warn …`. */
  lines: string[];
  exited: Promise<void>;
}

async function relayProcess(redisUrl: string, prefix: string, env: Record<string, string>): Promise<RelayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, redisUrl, prefix], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await exited;
  });
  const lines: string[] = [];
  let buffered = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        if (line.startsWith('{')) resolve((JSON.parse(line) as { url: string }).url);
        else lines.push(line);
      }
    });
    child.once('exit', (code) => reject(new Error(`relay exited ${code}`)));
  });
  return { child, url, lines, exited };
}

/** Two relay processes on one Redis, under a key prefix of their own. */
async function twoRelays(redisUrl: string, env: Record<string, string> = {}) {
  const prefix = `e2e:${randomBytes(6).toString('hex')}:`;
  const [a, b] = await Promise.all([relayProcess(redisUrl, prefix, env), relayProcess(redisUrl, prefix, env)]);
  return { a, b };
}

interface Arrival {
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The local app: records each request; `answer` may hold it (return a promise) and picks the reply. */
async function localApp(answer: (arrival: Arrival) => Promise<unknown> | unknown = () => undefined, reply = { status: 200, headers: {} as Record<string, string>, body: Buffer.from('ok') }) {
  const arrivals: Arrival[] = [];
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const arrival = { url: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
      arrivals.push(arrival);
      await answer(arrival);
      res.writeHead(reply.status, reply.headers).end(reply.body);
    });
  });
  cleanups.push(server.close);
  return { url: server.url, arrivals, deliveries: () => arrivals.map((arrival) => arrival.headers['x-service-delivery']) };
}

async function listener(relayUrl: string, channel: ChannelInfo, forwardTo: string, extra: Partial<ListenerOptions> = {}) {
  const client = await connectListener({ relayUrl, channel: channel.channel, token: channel.token, forwardTo, reconnect: { minTimeout: 50, maxTimeout: 200 }, ...extra });
  cleanups.push(() => client.close());
  const replies: ListenerReply[] = [];
  const drops: string[] = [];
  const state = { reconnected: 0 };
  client.on('reply', (reply) => replies.push(reply));
  client.on('reconnecting', ({ error }) => drops.push(error.message));
  client.on('connected', () => state.reconnected++);
  return { client, replies, drops, state };
}

function post(url: string, n: number, eventName = 'video.completed') {
  const body = eventText(n);
  return fetch(url, { method: 'POST', body, headers: { ...signedHeaders(body, `dlv_${n}`), 'x-service-event': eventName } });
}

async function problem(res: Response) {
  return { status: res.status, type: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after'), code: ((await res.json()) as { code: string }).code };
}

const healthz = async (url: string) => (await fetch(`${url}/healthz`)).status;
const listeners = async (url: string) => ((await (await fetch(`${url}/healthz`)).json()) as { listeners: number }).listeners;

describe.runIf(redis)('relay processes sharing one Redis (issue 13)', { timeout: 60_000 }, () => {
  it("carries an event taken by one process to a listener on the other, and that listener's reply back byte for byte; both ways", async () => {
    const { a, b } = await twoRelays(redis!.url);
    const bytes = Buffer.from([0x7b, 0x00, 0xff, 0xfe, 0x0d, 0x0a, 0xe2, 0x98, 0x83, 0x7d]);
    const app = await localApp(undefined, { status: 201, headers: { 'content-type': 'application/octet-stream', 'x-local': 'yes' }, body: bytes });
    for (const [ingress, other, n] of [[a, b, 1], [b, a, 2]] as const) {
      const channel = await createChannel(ingress.url);
      expect(channel.url.startsWith(ingress.url)).toBe(true);
      await listener(other.url, channel, `${app.url}/hook`);
      const body = `${eventText(n)}\u0000 and raw bytes \u00ff`;
      const res = await fetch(`${channel.url}/extra?q=1&q=2`, { method: 'POST', body, headers: signedHeaders(body, `dlv_${n}`) });
      expect(res.status).toBe(201);
      expect(res.headers.get('x-local')).toBe('yes');
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      const arrival = app.arrivals.at(-1)!;
      expect(arrival.body.toString()).toBe(body);
      expect(arrival.url).toBe('/hook/extra?q=1&q=2');
      expect(arrival.headers['x-service-delivery']).toBe(`dlv_${n}`);
    }
    expect(app.arrivals).toHaveLength(2);
  });

  it('sends an event to the listeners on both processes; the sender gets one reply', async () => {
    const { a, b } = await twoRelays(redis!.url);
    const app = await localApp();
    const channel = await createChannel(a.url);
    const [onA, onB] = [await listener(a.url, channel, app.url), await listener(b.url, channel, app.url)];
    expect((await post(`${b.url}/in/${channel.channel}`, 1)).status).toBe(200);
    await expect.poll(() => onA.replies.length + onB.replies.length, SOON).toBe(2);
    expect(app.deliveries()).toEqual(['dlv_1', 'dlv_1']);
  });

  it('catches a listener up in order on whichever process it reconnects to, and shares acknowledgements', async () => {
    const { a, b } = await twoRelays(redis!.url);
    const app = await localApp();
    const channel = await createChannel(a.url);
    const atB = `${b.url}/in/${channel.channel}`;
    const first = await listener(a.url, channel, app.url);
    expect((await post(atB, 1)).status).toBe(200); // taken at B, answered by the listener on A
    await first.client.close();
    await expect.poll(() => listeners(a.url), SOON).toBe(0);
    // Offline: every event is buffered, whichever process takes it.
    for (const n of [2, 3, 4, 5]) expect(await problem(await post(n % 2 ? atB : channel.url, n))).toMatchObject({ status: 503, code: 'no_listener' });
    const second = await listener(b.url, channel, app.url);
    await expect.poll(() => app.arrivals.length, SOON).toBe(5);
    expect(app.deliveries()).toEqual(['dlv_1', 'dlv_2', 'dlv_3', 'dlv_4', 'dlv_5']);
    expect(second.replies.map((reply) => [reply.event.deliveryId, reply.event.backlog])).toEqual([['dlv_2', true], ['dlv_3', true], ['dlv_4', true], ['dlv_5', true]]);
    // --replay works on any process too: event 1 was taken at B and answered through A.
    expect(await second.client.replay('dlv_1')).toMatchObject({ status: 200, event: { replay: true, seq: 1, deliveryId: 'dlv_1' } });
    await second.client.close();
    // Acknowledged on B, acknowledged everywhere: neither process would send them again.
    expect(await unacked(a.url, channel)).toEqual([]);
    expect(await unacked(b.url, channel)).toEqual([]);
    await listener(a.url, channel, app.url);
    expect((await post(atB, 6)).status).toBe(200);
    expect(app.deliveries()).toEqual(['dlv_1', 'dlv_2', 'dlv_3', 'dlv_4', 'dlv_5', 'dlv_1', 'dlv_6']);
  });

  it('answers as one relay does: 503 buffered with nobody anywhere, 504 when a listener elsewhere never answers, 202 when filters elsewhere leave it out; a delete reaches the other process', async () => {
    const { a, b } = await twoRelays(redis!.url, { RESPONSE_TIMEOUT_MS: '1500' });
    const channel = await createChannel(a.url);
    expect(await problem(await post(channel.url, 1))).toEqual({ status: 503, type: 'application/problem+json', retryAfter: '10', code: 'no_listener' });

    // A listener on B that takes events and never answers: the sender at A reads A's own 504 at its timeout.
    const silent = new WebSocket(`${b.url.replace('http', 'ws')}/channels/${channel.channel}/listen`, { headers: { authorization: `Bearer ${channel.token}` } });
    const seqs: number[] = [];
    silent.on('message', (data, isBinary) => isBinary && seqs.push((data as Buffer).length));
    await expect.poll(() => seqs.length, SOON).toBe(1); // event 1, caught up
    expect(await problem(await post(channel.url, 2))).toMatchObject({ status: 504, code: 'local_timeout' });
    silent.terminate();
    await expect.poll(() => listeners(b.url), SOON).toBe(0);
    // 504 is answered, so acknowledged (the sender retries with its own copy); event 1 is still owed.
    expect(await unacked(a.url, channel)).toEqual([1]);

    const app = await localApp();
    const failedOnly = await listener(b.url, channel, app.url, { events: ['video.failed'] });
    const filtered = await post(channel.url, 3);
    expect(filtered.status).toBe(202);
    expect(await filtered.json()).toEqual({ relayed: false, reason: 'filtered_by_listener' });
    expect((await post(channel.url, 4, 'video.failed')).status).toBe(200);
    expect(app.deliveries()).toEqual(['dlv_4']);

    const deleted = await fetch(`${a.url}/channels/${channel.channel}`, { method: 'DELETE', headers: { authorization: `Bearer ${channel.token}` } });
    expect(deleted.status).toBe(204);
    expect(await failedOnly.client.closed).toMatchObject({ code: 'channel_not_found' });
    expect((await post(`${b.url}/in/${channel.channel}`, 5)).status).toBe(404);
  });

  it('a process killed with SIGKILL: its listener reconnects to the other one and gets what was unacknowledged, and no sender hangs', async () => {
    const { a, b } = await twoRelays(redis!.url, { RESPONSE_TIMEOUT_MS: '2000' });
    const proxy = await startFailoverProxy([new URL(b.url), new URL(a.url)]); // as a load balancer would: B while it lives
    cleanups.push(proxy.close);
    const channel = await createChannel(a.url);
    for (const n of [1, 2, 3]) expect((await post(channel.url, n)).status).toBe(503);
    // The local app holds the first copies of events 1 and 5 until the end: B is killed while they are with it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cleanups.push(() => release());
    const hold = new Set(['dlv_1', 'dlv_5']);
    const app = await localApp((arrival) => hold.delete(String(arrival.headers['x-service-delivery'])) && held);
    const onB = await listener(proxy.url, channel, app.url);
    await expect.poll(() => app.deliveries(), SOON).toEqual(['dlv_1']); // caught up through B, one at a time
    expect((await post(channel.url, 4)).status).toBe(200); // live, A to B
    const inFlight = post(channel.url, 5);
    await expect.poll(() => app.deliveries().includes('dlv_5'), SOON).toBe(true);

    proxy.hold(); // the listener's reconnect waits until the sender has its answer, so the test knows which came first
    b.child.kill('SIGKILL');
    await b.exited;
    // The sender waiting at A for B's listener is answered at A's timeout, as when a listener never answers;
    // answered, the event is acknowledged (the sender retries with a copy of its own).
    expect(await problem(await inFlight)).toMatchObject({ status: 504, code: 'local_timeout' });
    proxy.release();
    // The listener lands on A and gets the events nobody acknowledged, in order.
    await expect.poll(() => app.deliveries().slice(3), SOON).toEqual(['dlv_1', 'dlv_2', 'dlv_3']);
    expect(onB.drops.length).toBeGreaterThan(0);
    expect(await listeners(a.url)).toBe(1);
    // Taken at A with the listener on A now; B's announcement of it has not expired, but B is gone.
    expect((await post(channel.url, 6)).status).toBe(200);
    release();
    await expect.poll(() => unacked(a.url, channel), SOON).toEqual([]);
  });

  it('rides out a Redis restart: 503 relay_unavailable and a failing /healthz meanwhile, said once each way in the log, and what was buffered before is delivered after', async () => {
    const own = await startRedis({ persist: true });
    cleanups.push(() => own.stop());
    const { a, b } = await twoRelays(own.url);
    const app = await localApp();
    const channel = await createChannel(a.url);
    const steady = await createChannel(a.url);
    const through = await listener(b.url, steady, app.url); // connected to B across the outage
    for (const n of [1, 2]) expect((await post(channel.url, n)).status).toBe(503);

    await own.kill();
    await expect.poll(() => healthz(a.url), SOON).toBe(503);
    const failing = (await (await fetch(`${a.url}/healthz`)).json()) as { status: string; persistence: { ok: boolean; detail: string } };
    expect(failing).toMatchObject({ status: 'failing', persistence: { ok: false, detail: expect.stringMatching(/^cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/) } });
    expect(await problem(await post(channel.url, 3))).toEqual({ status: 503, type: 'application/problem+json', retryAfter: '10', code: 'relay_unavailable' });
    expect((await fetch(`${b.url}/channels`, { method: 'POST' })).status).toBe(503);

    await own.start();
    await expect.poll(() => healthz(a.url), SOON).toBe(200);
    await expect.poll(() => healthz(b.url), SOON).toBe(200);
    for (const relay of [a, b]) {
      expect(relay.lines.filter((line) => line.startsWith('warn lost Redis'))).toHaveLength(1);
      expect(relay.lines.filter((line) => /^info Redis at \S+ is back/.test(line))).toHaveLength(1);
    }
    // Buffered before the restart, on disk in Redis: delivered after it, in order, through the other process.
    await listener(b.url, channel, app.url);
    await expect.poll(() => app.deliveries(), SOON).toEqual(['dlv_1', 'dlv_2']);
    expect((await post(channel.url, 4)).status).toBe(200);
    // The listener that stayed connected was asked to reconnect (live events may have missed B meanwhile) and serves on.
    await expect.poll(() => through.drops, SOON).toContain('connection closed (1012)');
    await expect.poll(() => through.state.reconnected, SOON).toBeGreaterThan(0);
    expect((await post(steady.url, 5)).status).toBe(200);
    expect(app.deliveries()).toEqual(['dlv_1', 'dlv_2', 'dlv_4', 'dlv_5']);
  });
});
