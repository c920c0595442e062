import express from 'express';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { MemoryDeliveryStore, createReceiver, type DeliveryStore } from '../../src/index.js';
import { createReceiver as createWebReceiver } from '../../src/web.js';
import { SECRET, completedEvent, signedRequest, type SignedRequest } from '../helpers/webhooks.js';

// Issue 20 item 15: a handler that throws with no onError listener answered 500 and printed nothing, so
// the README's first example failed silently. Like Express's final handler, the receiver now logs a
// failure it answers with a 5xx to console.error, unless the app listens with onError.

type Adapter = (receiver: { express(): unknown; fetch(req: Request): Promise<Response> }, req: SignedRequest) => Promise<number>;

const viaExpress: Adapter = async (receiver, req) => {
  const app = express();
  app.post('/webhooks', receiver.express() as express.RequestHandler);
  return (await request(app).post('/webhooks').set(req.headers).send(req.body)).status;
};

const viaNodeHttp: Adapter = async (receiver, req) => {
  const handle = receiver.express() as (req: unknown, res: unknown) => Promise<void>;
  const server = createServer((rq, rs) => void handle(rq, rs));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers: req.headers, body: req.body });
    await res.arrayBuffer();
    return res.status;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
};

const viaFetch: Adapter = async (receiver, req) =>
  (await receiver.fetch(new Request('http://localhost/webhooks', { method: 'POST', headers: req.headers, body: req.body }))).status;

const runtimes = {
  node: (store?: DeliveryStore) => createReceiver({ secret: SECRET, store: store ?? new MemoryDeliveryStore() }),
  web: (store?: DeliveryStore) => Object.assign(createWebReceiver({ secret: SECRET, ...(store ? { store } : {}) }), { express: () => undefined }),
};

const cases: Array<[string, keyof typeof runtimes, Adapter]> = [
  ['express()', 'node', viaExpress],
  ['express() on node:http', 'node', viaNodeHttp],
  ['fetch()', 'node', viaFetch],
  ['cliphook/web fetch()', 'web', viaFetch],
];

let logged: MockInstance<typeof console.error>;
beforeEach(() => {
  logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
});
afterEach(() => logged.mockRestore());

/** Everything console.error was given, as one string (messages and error stacks with their causes). */
const printed = () => logged.mock.calls.flat().map((part) => (part instanceof Error ? `${part.stack}\n${String((part.cause as Error | undefined)?.stack)}` : String(part))).join('\n');

describe.each(cases)('receiver %s with no onError listener', (_name, runtime, send) => {
  it('logs a handler that threw, with the delivery id and the error, and answers 500', async () => {
    const receiver = runtimes[runtime]();
    receiver.on('video.completed', () => {
      throw new Error('saveClip: database is down');
    });
    const status = await send(receiver, signedRequest(completedEvent(), { deliveryId: 'dlv_logged_1' }));
    expect(status).toBe(500);
    expect(logged).toHaveBeenCalledTimes(1);
    expect(printed()).toContain('dlv_logged_1');
    expect(printed()).toContain('saveClip: database is down');
    expect(printed()).toMatch(/onError/);
  });

  it('logs a delivery store that failed (503 store_unavailable)', async () => {
    const failing: DeliveryStore = {
      claim: () => Promise.reject(new Error('redis: connection refused')),
      complete: () => Promise.resolve(),
      release: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const receiver = runtimes[runtime](failing);
    receiver.on('video.completed', () => undefined);
    expect(await send(receiver, signedRequest(completedEvent(), { deliveryId: 'dlv_store_1' }))).toBe(503);
    expect(logged).toHaveBeenCalledTimes(1);
    expect(printed()).toContain('redis: connection refused');
    // No handler ran: the log and the listener say the store failed, not a handler (issue 30 follow-up).
    expect(printed()).toContain('(store_unavailable)');
    expect(printed()).toContain('The delivery store failed for delivery dlv_store_1');
    expect(printed()).not.toContain('A handler failed');
    const heard: Array<[string, string]> = [];
    receiver.onError((error) => void heard.push([error.code, 'stage' in error ? error.stage : '']));
    expect(await send(receiver, signedRequest(completedEvent(), { deliveryId: 'dlv_store_2' }))).toBe(503);
    expect(heard).toEqual([['store_unavailable', 'store']]);
  });

  it('stays quiet once onError listens, and for a refused (4xx) request', async () => {
    const receiver = runtimes[runtime]();
    const forged = signedRequest(completedEvent(), { secret: 'whsec_not_the_secret' });
    expect(await send(receiver, forged)).toBe(401);
    expect(logged).not.toHaveBeenCalled();

    const heard: string[] = [];
    receiver.on('video.completed', () => {
      throw new Error('boom');
    });
    receiver.onError((error) => void heard.push(error.code));
    expect(await send(receiver, signedRequest(completedEvent()))).toBe(500);
    expect(heard).toEqual(['handler_failed']);
    expect(logged).not.toHaveBeenCalled();
  });
});

it('logs a body a JSON parser consumed first (500 body_already_parsed), which is the app\'s mistake too', async () => {
  const receiver = runtimes.node();
  const app = express();
  app.use(express.json());
  app.post('/webhooks', receiver.express());
  const req = signedRequest(completedEvent());
  expect((await request(app).post('/webhooks').set(req.headers).send(req.body)).status).toBe(500);
  expect(logged).toHaveBeenCalledTimes(1);
  expect(printed()).toContain('body_already_parsed');
});
