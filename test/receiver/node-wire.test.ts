// The Node adapter at the wire: how the body and the headers arrive (one packet, several, chunked, cut
// off, over the limit, repeated or mixed-case headers), driven through raw sockets.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryDeliveryStore, createReceiver, type DeliveryStore, type WebhookReceiver } from '../../src/index.js';
import { wireHeaders } from '../../src/receiver/body.js';
import { SECRET, completedEvent, signedRequest } from '../helpers/webhooks.js';

let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = null;
});

interface Seen {
  handled: number;
  errors: string[];
  /** Stream events of each request, as the app's own listeners saw them. */
  streams: string[][];
  /** Requests whose body was read through 'data' listeners (streamed) rather than taken whole. */
  streamed: number;
}

async function listen(receiver: WebhookReceiver, prepare: (req: IncomingMessage) => void = () => undefined): Promise<{ port: number; seen: Seen }> {
  const seen: Seen = { handled: 0, errors: [], streams: [], streamed: 0 };
  receiver.on('video.completed', () => void seen.handled++);
  receiver.onError((error) => seen.errors.push(error instanceof Error && 'code' in error ? String(error.code) : 'handler'));
  const middleware = receiver.express();
  server = createServer((req: IncomingMessage, res) => {
    const events: string[] = [];
    seen.streams.push(events);
    req.on('end', () => events.push('end'));
    req.on('close', () => events.push('close'));
    const on = req.on.bind(req);
    req.on = ((name: string, listener: (...args: unknown[]) => void) => {
      if (name === 'data') seen.streamed++;
      return on(name, listener);
    }) as typeof req.on;
    prepare(req);
    void middleware(req, res);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server!.address() as AddressInfo).port, seen };
}

const receiverWith = (options: { limit?: string; store?: DeliveryStore } = {}) =>
  createReceiver({ secret: SECRET, store: options.store ?? new MemoryDeliveryStore(), ...(options.limit ? { limit: options.limit } : {}) });

/** A few turns of the event loop: the server (in this process) reads what was written before the next write. */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * Writes `parts` to a fresh socket (with `apart`, letting the server read each before the next) and
 * resolves with the raw reply once the server answers.
 */
function exchange(port: number, parts: (string | Buffer)[], { apart = false, end = false } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (/\r\n\r\n/.test(reply) && replyComplete(reply)) {
        socket.destroy();
        resolve(reply);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(reply));
    void (async () => {
      for (const part of parts) {
        if (socket.destroyed) return;
        socket.write(part);
        if (apart) await turns();
      }
      if (end) socket.end();
    })();
  });
}

function replyComplete(reply: string): boolean {
  const [head, ...rest] = reply.split('\r\n\r\n');
  const length = /content-length: (\d+)/i.exec(head!);
  return length !== null && Buffer.byteLength(rest.join('\r\n\r\n'), 'latin1') >= Number(length[1]);
}

const status = (reply: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1]);

function requestHead(headers: Record<string, string> | [string, string][], extra = ''): string {
  const lines = (Array.isArray(headers) ? headers : Object.entries(headers)).map(([name, value]) => `${name}: ${value}`);
  return `POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join('\r\n')}\r\n${extra}\r\n`;
}

describe('receiver.express() at the wire', () => {
  it('takes a body that came with its headers in one packet, and the request still ends and closes', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const reply = await exchange(port, [requestHead({ ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) }) + req.body]);
    expect(status(reply)).toBe(200);
    expect(seen.handled).toBe(1);
    expect(seen.streamed).toBe(0); // taken whole, with one read()
    await expect.poll(() => seen.streams[0]).toEqual(['end', 'close']);
  });

  it('streams a body whose stream has an encoding set, rather than taking a string for the bytes', async () => {
    const { port, seen } = await listen(receiverWith(), (req) => req.setEncoding('utf8'));
    const req = signedRequest(completedEvent());
    const reply = await exchange(port, [requestHead({ ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) }) + req.body]);
    // raw-body refuses a stream with an encoding: the request fails cleanly, nothing runs as text.
    expect(status(reply)).toBe(400);
    expect(seen.handled).toBe(0);
  });

  it('answers a request with Content-Length: 0 (no body) with a clear 4xx, without hanging', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const reply = await exchange(port, [requestHead({ ...req.headers, 'Content-Length': '0' })]);
    expect(status(reply)).toBe(401); // the signature was made over a body that did not come
    expect(reply).toContain('"code":"invalid_signature"');
    expect(seen.handled).toBe(0);
  });

  it('waits for a body sent after the headers, in several pieces', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const body = Buffer.from(req.body);
    const head = requestHead({ ...req.headers, 'Content-Length': String(body.length) });
    const reply = await exchange(port, [head, body.subarray(0, 10), body.subarray(10, 200), body.subarray(200)], { apart: true });
    expect(status(reply)).toBe(200);
    expect(seen.handled).toBe(1);
    expect(seen.streamed).toBe(1);
  });

  it('reads a chunked body, which announces no length', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const body = Buffer.from(req.body);
    const chunk = (part: Buffer) => `${part.length.toString(16)}\r\n${part.toString('latin1')}\r\n`;
    const head = requestHead({ ...req.headers, 'Transfer-Encoding': 'chunked' });
    const reply = await exchange(port, [head, chunk(body.subarray(0, 100)), chunk(body.subarray(100)), '0\r\n\r\n'], { apart: true });
    expect(status(reply)).toBe(200);
    expect(seen.handled).toBe(1);
  });

  it('answers 413 at once when the announced length is over the limit, without waiting for the body', async () => {
    const { port, seen } = await listen(receiverWith({ limit: '1kb' }));
    const req = signedRequest(completedEvent());
    // The headers promise 10 MB that never come: the reply must not wait for them.
    const reply = await exchange(port, [requestHead({ ...req.headers, 'Content-Length': String(10 * 1024 * 1024) })]);
    expect(status(reply)).toBe(413);
    expect(reply).toContain('"code":"body_too_large"');
    expect(seen.handled).toBe(0);
  });

  it('answers 413 as soon as a chunked body passes the limit', async () => {
    const { port, seen } = await listen(receiverWith({ limit: '1kb' }));
    const req = signedRequest(completedEvent());
    const big = 'x'.repeat(800);
    const chunk = `${big.length.toString(16)}\r\n${big}\r\n`;
    const reply = await exchange(port, [requestHead({ ...req.headers, 'Transfer-Encoding': 'chunked' }), chunk, chunk, chunk], { apart: true });
    expect(status(reply)).toBe(413);
    expect(seen.handled).toBe(0);
  });

  it('a sender that leaves mid-body runs no handler, is not reported as invalid_json, and claims nothing', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const head = requestHead({ ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) });
    const cut = await exchange(port, [head, req.body.slice(0, 50)], { apart: true, end: true });
    // Nobody is left to read a reply: the receiver writes none (what is here is Node's own answer to a
    // half-closed request, `400 Bad Request` with no body).
    expect(cut).not.toContain('problem+json');
    expect(cut).not.toContain('invalid_json');
    expect(seen.handled).toBe(0);
    expect(seen.errors).toEqual([]);
    // The sender's retry of the same delivery is not taken for a duplicate or an in-progress claim.
    expect(status(await exchange(port, [head + req.body]))).toBe(200);
    expect(seen.handled).toBe(1);
    expect(seen.errors).toEqual([]);
  });

  it('reads headers whatever their case on the wire, and refuses a signature sent twice', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const length = String(Buffer.byteLength(req.body));
    const mixed: [string, string][] = [
      ['X-SERVICE-SIGNATURE', req.headers['x-service-signature']!],
      ['X-Service-Delivery', req.headers['x-service-delivery']!],
      ['x-service-event', 'video.completed'],
      ['Content-Length', length],
    ];
    expect(status(await exchange(port, [requestHead(mixed) + req.body]))).toBe(200);
    const twice: [string, string][] = [...mixed, ['x-service-signature', req.headers['x-service-signature']!]];
    const reply = await exchange(port, [requestHead(twice) + req.body]);
    expect(status(reply)).toBe(400);
    expect(reply).toContain('"code":"malformed_signature"');
    expect(seen.handled).toBe(1);
  });

  it('refuses an X-Service-Delivery sent twice with 400 missing_delivery_id', async () => {
    const { port, seen } = await listen(receiverWith());
    const req = signedRequest(completedEvent());
    const twice: [string, string][] = [
      ...Object.entries(req.headers),
      ['X-Service-Delivery', 'dlv_other'],
      ['Content-Length', String(Buffer.byteLength(req.body))],
    ];
    const reply = await exchange(port, [requestHead(twice) + req.body]);
    expect(status(reply)).toBe(400);
    expect(reply).toContain('"code":"missing_delivery_id"');
    expect(seen.handled).toBe(0);
  });

  it('works with a store that answers claims with promises', async () => {
    const memory = new MemoryDeliveryStore();
    const asyncStore: DeliveryStore = {
      claim: async (...args) => memory.claim(...args),
      complete: (keys) => memory.complete(keys),
      release: (keys, owner) => memory.release(keys, owner),
      close: () => memory.close(),
    };
    const { port, seen } = await listen(receiverWith({ store: asyncStore }));
    const req = signedRequest(completedEvent());
    const raw = requestHead({ ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) }) + req.body;
    expect(status(await exchange(port, [raw]))).toBe(200);
    const again = await exchange(port, [raw]);
    expect(status(again)).toBe(200);
    expect(again).toContain('"duplicate":true');
    expect(seen.handled).toBe(1);
  });
});

describe('wireHeaders', () => {
  it('joins repeated fields as Node does, and falls back to req.headers for a name the raw list lacks', () => {
    const req = {
      rawHeaders: ['X-Service-Delivery', 'a', 'x-service-delivery', 'b', 'Content-Type', 'application/json'],
      headers: { 'x-service-delivery': 'a, b', 'x-set-by-middleware': 'yes' },
    } as unknown as IncomingMessage;
    const headers = wireHeaders(req);
    expect(headers.get('x-service-delivery')).toBe('a, b');
    expect(headers.get('content-type')).toBe('application/json');
    expect(headers.get('x-set-by-middleware')).toBe('yes');
    expect(headers.get('x-missing')).toBeNull();
    const mock = { rawHeaders: undefined, headers: { 'x-service-event': ['video.completed', 'video.failed'] } } as unknown as IncomingMessage;
    expect(wireHeaders(mock).get('x-service-event')).toBe('video.completed, video.failed');
  });
});
