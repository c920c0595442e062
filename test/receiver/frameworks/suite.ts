import { connect, type AddressInfo, type Server } from 'node:net';
import { expect, it, vi } from 'vitest';
import { MemoryDeliveryStore, createReceiver, createTestWebhook, type ReceiverOptions, type VideoCompletedEvent, type WebhookContext, type WebhookReceiver } from '../../../src/index.js';

// Issue 32: the same five checks in every framework, each against the real framework on 127.0.0.1:0.

export const SECRET = 'whsec_frameworks_test';
/** Small, so an oversized body is cheap to send. */
export const LIMIT = 4096;

export interface Mounted {
  /** The webhook route's full URL. */
  url: string;
  close(): Promise<void>;
}

export interface Answer {
  status: number;
  contentType: string | null;
  body: Record<string, unknown> | null;
}

/**
 * The body deadline of the stalled-body check: real time, since the framework's own socket and parser
 * run on real timers; short, so the check stays fast, and far above what a local body takes.
 */
export const STALL_BODY_TIMEOUT = 200;

export function newReceiver(options: Partial<ReceiverOptions> = {}): WebhookReceiver {
  return createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), limit: LIMIT, ...options });
}

export async function post(url: string, body: BodyInit, headers: Record<string, string>): Promise<Answer> {
  const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers, body };
  if (body instanceof ReadableStream) init.duplex = 'half';
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON: left null, which the assertions show.
  }
  return { status: res.status, contentType: res.headers.get('content-type'), body: parsed };
}

/** The base URL of a listening node:net server. */
export function baseUrl(server: Server): string {
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/**
 * A JSON body over LIMIT sent in chunks with no Content-Length, so only the streaming cap can stop it
 * (JSON, so a framework parser that runs first, as NestJS's does, passes it on).
 */
export function chunkedOversized(): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent === 0) controller.enqueue(encoder.encode('{"pad":"'));
      if (sent > LIMIT * 2) {
        controller.enqueue(encoder.encode('"}'));
        return controller.close();
      }
      sent += 1024;
      controller.enqueue(new Uint8Array(1024).fill(0x78));
    },
  });
}

export interface StalledAnswer extends Answer {
  /** The server closed the connection after answering. */
  closed: boolean;
}

/**
 * Sends a webhook's headers and the first byte of its body over a raw socket, then nothing more: with a
 * Content-Length, or chunked (one chunk of one byte). Resolves with the answer once the server closes
 * the connection, or with what came by `giveUpMs` (then `closed: false`).
 */
export async function stallAfterOneByte(url: string, body: string, headers: Record<string, string>, { chunked = false, giveUpMs = 5000 } = {}): Promise<StalledAnswer> {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect(Number(port), hostname);
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const framing = chunked ? 'transfer-encoding: chunked\r\n' : `content-length: ${Buffer.byteLength(body)}\r\n`;
  socket.write(`POST ${pathname} HTTP/1.1\r\nhost: ${hostname}:${port}\r\n${framing}${head}\r\n${chunked ? `1\r\n${body[0]}\r\n` : body[0]}`);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => void chunks.push(chunk));
  const closed = await new Promise<boolean>((resolve) => {
    const giveUp = setTimeout(() => resolve(false), giveUpMs);
    socket.once('close', () => {
      clearTimeout(giveUp);
      resolve(true);
    });
    socket.once('error', () => undefined);
  });
  socket.destroy();
  const text = Buffer.concat(chunks).toString('utf8');
  const [top = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...fields] = top.split('\r\n');
  const field = (name: string) => fields.find((line) => line.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? null;
  let payload = rest.join('\r\n\r\n');
  // Some servers (Next.js) send the answer chunked: join the chunks' data.
  if (field('transfer-encoding') === 'chunked') {
    let joined = '';
    for (let at = 0; ; ) {
      const size = Number.parseInt(payload.slice(at, payload.indexOf('\r\n', at)), 16);
      if (!(size > 0)) break;
      const start = payload.indexOf('\r\n', at) + 2;
      joined += payload.slice(start, start + size);
      at = start + size + 2;
    }
    payload = joined;
  }
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    // Not JSON (or nothing came): left null, which the assertions show.
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), contentType: field('content-type'), body: parsed, closed };
}

/**
 * The checks every adapter passes: a signed webhook, a duplicate, a bad signature, an oversized body
 * (declared, and streamed when `chunked`), and a body that stalls after one byte (with a Content-Length,
 * and chunked when `chunked`), unless `stall` is false: where the framework's own parser reads the body
 * before the receiver is called. The parsed-body mistake differs per framework: each file has its own.
 */
export function frameworkChecks(mount: (receiver: WebhookReceiver) => Promise<Mounted>, { chunked = true, stall = true } = {}): void {
  async function withMounted(run: (mounted: Mounted, receiver: WebhookReceiver) => Promise<void>, options: Partial<ReceiverOptions> = {}): Promise<void> {
    const receiver = newReceiver(options);
    const mounted = await mount(receiver);
    try {
      await run(mounted, receiver);
    } finally {
      await mounted.close();
      await receiver.close();
    }
  }

  it('answers a signed webhook 200 and calls the typed handler once; a duplicate is 200 duplicate and runs nothing', () =>
    withMounted(async ({ url }, receiver) => {
      const seen: [VideoCompletedEvent, WebhookContext][] = [];
      const failed = vi.fn();
      receiver.on('video.completed', (event, context) => void seen.push([event, context]));
      receiver.on('video.failed', failed);
      const hook = createTestWebhook('video.completed', { secret: SECRET, event: { credits_used: 18 } });

      const first = await post(url, hook.body, hook.headers);
      expect(first).toMatchObject({ status: 200, body: { received: true } });
      expect(first.body).not.toHaveProperty('duplicate');
      expect(seen).toHaveLength(1);
      expect(seen[0]![0]).toEqual(hook.event);
      expect(seen[0]![0].video_url).toBe(hook.event.video_url);
      expect(seen[0]![1].deliveryId).toBe(hook.deliveryId);
      expect(Buffer.from(seen[0]![1].rawBody).toString()).toBe(hook.body);

      const again = await post(url, hook.body, hook.headers);
      expect(again).toMatchObject({ status: 200, body: { received: true, duplicate: true } });
      expect(seen).toHaveLength(1);
      expect(failed).not.toHaveBeenCalled();
    }));

  it('refuses a bad signature with 401 invalid_signature as problem+json, running nothing', () =>
    withMounted(async ({ url }, receiver) => {
      const handler = vi.fn();
      receiver.onAny(handler);
      const hook = createTestWebhook('video.failed', { secret: 'whsec_someone_else', event: { error_code: 'content_rejected' } });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 401, contentType: 'application/problem+json', body: { code: 'invalid_signature', status: 401 } });
      expect(handler).not.toHaveBeenCalled();
    }));

  it("refuses a body over the receiver's limit with 413 body_too_large as problem+json", () =>
    withMounted(async ({ url }, receiver) => {
      const handler = vi.fn();
      const heard: string[] = [];
      receiver.onAny(handler);
      receiver.onError((error) => void heard.push(error.code));
      const hook = createTestWebhook('video.completed', { secret: SECRET, event: { prompt: 'x'.repeat(LIMIT) } });
      const res = await post(url, hook.body, hook.headers);
      expect(res).toMatchObject({ status: 413, contentType: 'application/problem+json', body: { code: 'body_too_large', status: 413 } });
      if (chunked) {
        const streamed = await post(url, chunkedOversized(), { ...hook.headers });
        expect(streamed).toMatchObject({ status: 413, contentType: 'application/problem+json', body: { code: 'body_too_large' } });
      }
      expect(handler).not.toHaveBeenCalled();
      expect(heard).toEqual(chunked ? ['body_too_large', 'body_too_large'] : ['body_too_large']);
      // Nothing accepted was lost: the next good webhook on the same server still runs.
      const good = createTestWebhook('video.completed', { secret: SECRET });
      expect((await post(url, good.body, good.headers)).status).toBe(200);
      expect(handler).toHaveBeenCalledTimes(1);
    }));

  it.runIf(stall)('answers a body that stalls after one byte 408 body_timeout as problem+json once `bodyTimeout` passes, and closes the connection', () =>
    withMounted(
      async ({ url }, receiver) => {
        const handler = vi.fn();
        const heard: string[] = [];
        receiver.onAny(handler);
        receiver.onError((error) => void heard.push(error.code));
        const hook = createTestWebhook('video.completed', { secret: SECRET });
        const framings = chunked ? [false, true] : [false];
        for (const framing of framings) {
          const answer = await stallAfterOneByte(url, hook.body, hook.headers, { chunked: framing });
          expect(answer).toMatchObject({ status: 408, contentType: 'application/problem+json', body: { code: 'body_timeout', status: 408 }, closed: true });
        }
        expect(handler).not.toHaveBeenCalled();
        expect(heard).toEqual(framings.map(() => 'body_timeout'));
        // The server still takes the next webhook, whole, within the same deadline.
        expect((await post(url, hook.body, hook.headers)).status).toBe(200);
        expect(handler).toHaveBeenCalledTimes(1);
      },
      { bodyTimeout: STALL_BODY_TIMEOUT },
    ));
}
