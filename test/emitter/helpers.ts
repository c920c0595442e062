import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { createEmitter, createReceiver, MemoryDeliveryStore, MemoryOutbox, type Delivery, type DeliveryAttempt, type EmitterClock, type EmitterOptions, type WebhookEmitter } from 'cliphook';

/** A clock that moves only when told to, firing due timers in order. */
export class FakeClock implements EmitterClock {
  #now: number;
  #seq = 0;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  constructor(start = Date.parse('2026-11-22T00:00:00Z')) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): number {
    const id = ++this.#seq;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers armed and not yet fired or cleared. */
  get timerCount(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, each at its own time. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers) if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.#timers.delete(next[0]);
      this.#now = next[1].at;
      next[1].callback();
    }
    this.#now = target;
  }
}

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  url: string;
}

export interface TestServer {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

/** A real HTTP server on 127.0.0.1 with a random port that records every request. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ headers: req.headers, body: body.toString('utf8'), url: req.url ?? '' });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A server that answers every request with `status` and `body`. */
export function answering(status: number, body = '', headers: Record<string, string> = {}): Promise<TestServer> {
  return startServer((_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  });
}

/**
 * Our real receiver behind a server; `fail(n)` decides, per request number, to answer with a status
 * before the receiver sees it.
 */
export async function startReceiver(secret: string, clock: () => number, fail: (n: number) => number | null = () => null) {
  const receiver = createReceiver({ secret, store: new MemoryDeliveryStore({ clock }), clock });
  const handled: unknown[] = [];
  receiver.onAny((event) => void handled.push(event));
  const middleware = receiver.express();
  let n = 0;
  const server = await startServer((req, res, body) => {
    const status = fail(n++);
    if (status !== null) {
      res.writeHead(status);
      res.end();
      return;
    }
    // The body was read already; hand the middleware the Buffer, as express.raw() would.
    (req as IncomingMessage & { body?: Buffer }).body = body;
    void middleware(req, res);
  });
  return { ...server, handled, receiver };
}

/** Resolves with the next `attempt` event of the emitter. */
export function nextAttempt(emitter: WebhookEmitter): Promise<[Delivery, DeliveryAttempt]> {
  return new Promise((resolve) => {
    const listener = (delivery: Delivery, attempt: DeliveryAttempt): void => {
      emitter.off('attempt', listener);
      resolve([delivery, attempt]);
    };
    emitter.on('attempt', listener);
  });
}

/** Resolves once the emitter reports the delivery delivered or failed. */
export function settled(emitter: WebhookEmitter, id: string): Promise<Delivery> {
  const current = emitter.get(id);
  if (current && (current.state === 'delivered' || current.state === 'failed')) return Promise.resolve(current);
  return new Promise((resolve) => {
    const listener = (delivery: Delivery): void => {
      if (delivery.id !== id) return;
      emitter.off('delivered', listener).off('failed', listener);
      resolve(delivery);
    };
    emitter.on('delivered', listener).on('failed', listener);
  });
}

/** A spec 2.12 body without `delivered_at`. */
export function completedPayload(id = 48213): Record<string, unknown> {
  return {
    id, status: 'done', prompt: 'A red fox in fresh snow', video_url: `https://app.example.com/videos/${id}`,
    error: null, error_code: null, credits_used: 18, duration: 10, model: 'standard',
    created_at: '2026-11-21T23:57:12Z', completed_at: '2026-11-21T23:58:49Z',
  };
}

/**
 * Emitters and servers for one test file, stopped after each test: `emitterFor` makes a memory-outbox
 * emitter that may call local addresses, `track` closes a server.
 */
export function useEmitters() {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    cleanups,
    emitterFor(options: EmitterOptions = {}): WebhookEmitter {
      const emitter = createEmitter({ store: new MemoryOutbox(), allowPrivateNetworks: true, ...options });
      cleanups.push(() => emitter.stop());
      return emitter;
    },
    track<T extends TestServer>(server: T): T {
      cleanups.push(() => server.close());
      return server;
    },
  };
}
