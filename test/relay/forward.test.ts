// The listener's hop to the local app (node:http): what it sends, what it brings back, and how it fails.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ForwardError, createForwarder, type Forwarder } from '../../src/relay/forward.js';
import type { EventFrame } from '../../src/relay/frames.js';
import type { Scheduler } from '../../src/relay/heartbeat.js';

const open: Array<{ server?: Server; forwarder?: Forwarder }> = [];
// The forwarder's deadlines, fired by hand.
const timers = new Map<number, () => void>();
let nextTimer = 0;
const scheduler: Scheduler = {
  setTimeout: (callback) => {
    const id = ++nextTimer;
    timers.set(id, () => {
      timers.delete(id);
      callback();
    });
    return id;
  },
  clearTimeout: (id) => void timers.delete(id as number),
  setInterval: () => 0,
  clearInterval: () => undefined,
};
afterEach(async () => {
  for (const { server, forwarder } of open.splice(0)) {
    forwarder?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  }
});

async function app(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handler(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ server });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function forwarder(url: string, timeoutMs = 5000, maxReplyBytes = 1024 * 1024): Forwarder {
  const created = createForwarder(new URL(url), timeoutMs, maxReplyBytes, scheduler);
  open.push({ forwarder: created });
  return created;
}

const event = (overrides: Partial<EventFrame> = {}): EventFrame => ({
  type: 'event',
  seq: 1,
  receivedAt: 0,
  method: 'POST',
  path: '',
  query: '',
  headers: ['Content-Type', 'application/json', 'X-Multi', 'one', 'x-multi', 'two'],
  body: Buffer.from('{"a":1}'),
  ...overrides,
}) as EventFrame;

describe('createForwarder', () => {
  it('sends the method, joined target, headers in order and body; brings back status, end-to-end headers and body', async () => {
    const url = await app((req, res, body) => {
      res.writeHead(201, [['X-Seen', `${req.method} ${req.url} ${body}`], ['X-Raw', req.rawHeaders.filter((_, i) => i % 2 === 0 && /^x-/i.test(req.rawHeaders[i]!)).join(',')], ['Connection', 'keep-alive']]);
      res.end('made');
    });
    const reply = await forwarder(`${url}/hooks?a=1`).forward(event({ method: 'PUT', path: '/x', query: '?b=2' }));
    expect(reply.status).toBe(201);
    expect(reply.body.toString()).toBe('made');
    const headers = Object.fromEntries(reply.headers.reduce<string[][]>((pairs, value, i) => (i % 2 ? pairs : [...pairs, [value.toLowerCase(), reply.headers[i + 1]!]]), []));
    expect(headers['x-seen']).toBe('PUT /hooks/x?a=1&b=2 {"a":1}');
    expect(headers['x-raw']).toBe('X-Multi,x-multi');
    expect(headers.connection).toBeUndefined(); // hop-by-hop, dropped
  });

  it("passes on a HEAD reply's Content-Length", async () => {
    const url = await app((_req, res) => {
      res.writeHead(200, { 'content-length': '12345' });
      res.end();
    });
    const reply = await forwarder(url).forward(event({ method: 'HEAD', body: Buffer.alloc(0) }));
    expect(reply.headers).toEqual(expect.arrayContaining(['Content-Length', '12345']));
    expect(reply.body.length).toBe(0);
  });

  it('fails with local_unreachable for a reply over the cap, and for an app that is not there', async () => {
    const url = await app((_req, res) => res.end('x'.repeat(2000)));
    await expect(forwarder(url, 5000, 1000).forward(event())).rejects.toMatchObject({ code: 'local_unreachable', message: expect.stringMatching(/larger than 1000 bytes/) });
    const gone = await app(() => undefined);
    const { server } = open.find((entry) => entry.server && `http://127.0.0.1:${(entry.server.address() as AddressInfo).port}` === gone)!;
    await new Promise((resolve) => server!.close(resolve));
    const error = await forwarder(gone).forward(event()).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(ForwardError);
    expect(error).toMatchObject({ code: 'local_unreachable', message: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('turns a target node:http refuses at once into local_unreachable, leaving no deadline armed', async () => {
    const url = await app((_req, res) => res.end());
    const error = await forwarder(url).forward(event({ path: '/\u20ac' })).catch((failure: unknown) => failure);
    expect(error).toMatchObject({ code: 'local_unreachable', message: expect.stringMatching(/ERR_UNESCAPED_CHARACTERS/) });
    expect(timers.size).toBe(0);
  });

  it('clears its deadline once the app answers, or once a reply passes the cap', async () => {
    const url = await app((_req, res) => res.end('x'.repeat(2000)));
    await forwarder(url).forward(event());
    await forwarder(url, 5000, 1000).forward(event()).catch(() => undefined);
    expect(timers.size).toBe(0);
  });

  it('fails with local_timeout when the app does not answer in time', async () => {
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const url = await app(() => arrived()); // never answers
    const pending = forwarder(url, 2000).forward(event()).catch((failure: unknown) => failure);
    await reached;
    expect(timers.size).toBe(1);
    for (const fire of timers.values()) fire();
    expect(await pending).toMatchObject({ code: 'local_timeout', message: 'no reply within 2000 ms' });
    expect(timers.size).toBe(0);
  });
});
