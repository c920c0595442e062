import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import WebSocket from 'ws';
import { parseServerFrame } from '../../src/relay/frames.js';
import { createReceiver, MemoryDeliveryStore, sign, type ChannelInfo, type WebhookContext, type WebhookEvent } from 'cliphook';

export const SECRET = 'whsec_relay_test';

/**
 * Extra paths under a channel that must never reach the local app: the relay's ingress (`pathRefusal`) and
 * the listener's own check (`unsafePath`) both refuse every one, so neither relies on the other (issue 10).
 */
export const REFUSED_PATHS: readonly string[] = [
  '/..', '/../admin/users', '/a/../../admin', '/.', '/./x', '/%2e%2e/admin', '/%2E%2e/admin', '/.%2e/admin', '/%2e./admin', '/%2E',
  '/a%2fb', '/a%2F..%2Fadmin', '/a\\b', '/..\\admin', '/a%5cb', '/a%5C..', '/..;/admin', '/a;jsessionid=1', '/a%3b', '/%00', '/a%00.json',
  '/a%0d%0aX: y', '/%7f', '/%252e%252e/admin', '/%c0%ae%c0%ae/admin', '/\uff0e\uff0e/admin', '/caf\u00e9', '/a#/../admin', '/%u002e%u002e/admin',
  // Found in review: each once passed the listener's weaker check.
  '/..%00/admin', '/.%00', '/%25%32%65%25%32%65/admin', '/a%25%32%66..%25%32%66admin', '/%25252e%25252e/admin', '/..%3b/admin', '/%2e%2e%3b/admin', '/..%09/',
];
/** Paths both checks let through. */
export const ALLOWED_PATHS: readonly string[] = ['', '/', '/hooks/v1', '//double//slash', '/a.b/c..d/...', '/.well-known', '/a%20b', "/p|q^{}!$&'()*+,=:@~", '/%41%2B'];

/** A temporary folder, removed by the returned function. */
export async function testdir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-relay-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * The raw text of a video.completed webhook, written by hand so it keeps what a re-serialiser would
 * change: escaped slashes, non-ASCII, an integer above 2^53, and optional padding to a given size.
 */
export function eventText(id: number, { padTo = 0, deliveredAt = new Date().toISOString() } = {}): string {
  const head =
    `{"event":"video.completed","id":${id},"status":"done",` +
    `"prompt":"Füchse im Schnee \\u2014 雪の中の狐 🦊 at https:\\/\\/example.com\\/fox","video_url":"https:\\/\\/app.example.com\\/videos\\/${id}",` +
    `"error":null,"error_code":null,"credits_used":18,"duration":10,"model":"standard",` +
    `"created_at":"2026-11-21T23:57:12Z","completed_at":"2026-11-21T23:58:49Z","delivered_at":"${deliveredAt}",` +
    `"trace":90071992547409931234,"pad":"`;
  const tail = '"}';
  const pad = Math.max(0, padTo - Buffer.byteLength(head + tail));
  return head + 'x'.repeat(pad) + tail;
}

/** Signed headers for a body, as the service sends them. */
export function signedHeaders(body: string, deliveryId: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-service-event': 'video.completed',
    'x-service-delivery': deliveryId,
    'x-service-signature': sign(body, SECRET),
  };
}

export interface LocalApp {
  url: string;
  /** Every delivery the receiver's handler ran for, in order. */
  handled: Array<{ event: WebhookEvent; context: WebhookContext }>;
  /** Raw requests seen by the echo route `/echo`. */
  echoes: Array<{ method: string; url: string; rawHeaders: string[]; body: Buffer }>;
  close(): Promise<void>;
}

/**
 * A real Express app: `/webhooks` is `receiver.express()` (signature check, dedupe), `/status/:code`
 * answers that status, `/echo` records the raw request.
 */
export async function startLocalApp(onHandled?: (event: WebhookEvent) => void): Promise<LocalApp> {
  const handled: LocalApp['handled'] = [];
  const echoes: LocalApp['echoes'] = [];
  const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), tolerance: false, limit: '2mb' });
  receiver.onAny((event, context) => {
    handled.push({ event, context });
    onHandled?.(event);
  });
  const app = express();
  app.post('/webhooks', receiver.express());
  app.all('/status/:code', (req, res) => {
    req.resume();
    const status = Number(req.params.code);
    res.status(status).set('x-local', 'yes').append('set-cookie', ['a=1', 'b=2']);
    if (status === 204) res.end();
    else res.type('application/json').send(`{"status":${status}}`);
  });
  app.all('/big', (req, res) => {
    req.resume();
    res.type('text/plain').send('r'.repeat(100 * 1024));
  });
  app.all('/echo{/*rest}', express.raw({ type: () => true, limit: '2mb' }), (req, res) => {
    echoes.push({ method: req.method, url: req.originalUrl, rawHeaders: req.rawHeaders, body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0) });
    res.status(200).send('echoed');
  });
  const server = await listen(app);
  return { url: server.url, handled, echoes, close: server.close };
}

/** Listens on 127.0.0.1:0. */
export async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A scheduler whose timers fire only when the test says so. */
export function manualScheduler() {
  const intervals = new Set<{ callback: () => void }>();
  const timeouts = new Set<{ callback: () => void }>();
  return {
    setInterval(callback: () => void) {
      const handle = { callback };
      intervals.add(handle);
      return handle;
    },
    clearInterval(handle: unknown) {
      intervals.delete(handle as { callback: () => void });
    },
    setTimeout(callback: () => void) {
      const handle = { callback };
      timeouts.add(handle);
      return handle;
    },
    clearTimeout(handle: unknown) {
      timeouts.delete(handle as { callback: () => void });
    },
    /** Runs every interval callback once. */
    tick() {
      for (const handle of [...intervals]) handle.callback();
    },
    /** Fires every pending timeout. */
    fireTimeouts() {
      const due = [...timeouts];
      timeouts.clear();
      for (const handle of due) handle.callback();
    },
    get pendingTimeouts() {
      return timeouts.size;
    },
  };
}

/** Sends `text` as is over a new TCP connection to `baseUrl` and resolves with everything the server sent back. */
export function rawRequest(baseUrl: string, text: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.once('error', reject);
  });
}

/** The events the relay still holds unacknowledged: what a new connection would be sent. */
export async function unacked(relayUrl: string, channel: ChannelInfo): Promise<number[]> {
  const socket = new WebSocket(`${relayUrl.replace('http', 'ws')}/channels/${channel.channel}/listen`, { headers: { authorization: `Bearer ${channel.token}` } });
  const seqs: number[] = [];
  await new Promise<void>((resolve, reject) => {
    socket.on('message', (data, isBinary) => {
      const frame = parseServerFrame(data, isBinary);
      // The catch-up follows the hello at once; a replay answer comes after it, in order.
      if (frame.type === 'hello') socket.send(JSON.stringify({ type: 'replay', ref: 'dlv_none' }));
      else if (frame.type === 'event') seqs.push(frame.seq);
      else resolve();
    });
    socket.once('error', reject);
  });
  socket.terminate();
  return seqs;
}
