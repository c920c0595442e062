// The receiver's body deadline at the readers themselves, on the simulated clock: a body still arriving
// when `bodyTimeout` passes is refused, and the one timer a streamed read starts is gone once it ends.
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BodyReadError, readBody } from '../../src/http/read-body.js';
import { MemoryDeliveryStore, WebhookVerificationError, createReceiver } from '../../src/index.js';
import { createReceiver as createWebReceiver } from '../../src/web.js';
import { readFetchBody } from '../../src/receiver/fetch-body.js';
import { DEFAULT_BODY_TIMEOUT } from '../../src/receiver/limit.js';

const LIMIT = 1024;

/** A request body stream that has received nothing yet. */
const pending = () => new PassThrough() as PassThrough & IncomingMessage;

/** A Request whose body stream the test feeds; `cancelled` tells whether the reader cancelled it. */
function streamedRequest(headers: Record<string, string> = {}) {
  let feed!: ReadableStreamDefaultController<Uint8Array>;
  const state = { cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    start: (controller) => void (feed = controller),
    cancel: () => void (state.cancelled = true),
  });
  const request = new Request('http://127.0.0.1/webhooks', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);
  return { request, feed, state };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('bodyTimeout: the readers', () => {
  it('a Node body streamed in time resolves and leaves no timer; one that stalls is refused with BodyReadError timeout, paused', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const req = pending();
    const read = readBody(req, LIMIT, Number.NaN, 1000);
    await vi.advanceTimersByTimeAsync(0);
    req.end('{"a":1}');
    expect((await read).toString()).toBe('{"a":1}');
    expect(vi.getTimerCount()).toBe(0);

    const stalled = pending();
    const late = readBody(stalled, LIMIT, Number.NaN, 1000);
    const outcome = Promise.resolve(late).catch((error: unknown) => error);
    stalled.write('{');
    await vi.advanceTimersByTimeAsync(999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(BodyReadError);
    expect((error as BodyReadError).reason).toBe('timeout');
    expect(stalled.isPaused()).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a body that arrived whole starts no timer', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const req = pending();
    req.write('{"a":1}');
    expect((readBody(req, LIMIT, 7, 1000) as Buffer).toString()).toBe('{"a":1}');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a Fetch body with a Content-Length, or streamed, resolves and leaves no timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const declared = new Request('http://127.0.0.1/webhooks', { method: 'POST', body: '{"a":1}', headers: { 'content-length': '7' } });
    expect(new TextDecoder().decode(await readFetchBody(declared, LIMIT, 1000))).toBe('{"a":1}');
    expect(vi.getTimerCount()).toBe(0);
    const { request, feed } = streamedRequest();
    const read = readFetchBody(request, LIMIT, 1000);
    feed.enqueue(new TextEncoder().encode('{"a":1}'));
    feed.close();
    expect(new TextDecoder().decode(await read)).toBe('{"a":1}');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a Fetch body that stalls is refused 408 body_timeout when bodyTimeout passes, the stream left uncancelled', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    for (const headers of [{}, { 'content-length': '100' }] as Record<string, string>[]) {
      const { request, feed, state } = streamedRequest(headers);
      const outcome = readFetchBody(request, LIMIT, 1000).catch((error: unknown) => error);
      feed.enqueue(new TextEncoder().encode('{'));
      await vi.advanceTimersByTimeAsync(999);
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      const error = await outcome;
      expect(error).toBeInstanceOf(WebhookVerificationError);
      expect(error).toMatchObject({ code: 'body_timeout', status: 408 });
      expect(state.cancelled).toBe(false);
      expect(vi.getTimerCount()).toBe(0);
    }
  });
});

describe('bodyTimeout: the option', () => {
  it(`defaults to ${DEFAULT_BODY_TIMEOUT} ms on both receivers and is answered 408 problem+json with connection: close`, () => {
    const receiver = createReceiver({ secret: 'whsec_x', store: new MemoryDeliveryStore() });
    expect(receiver.bodyTimeout).toBe(30_000);
    expect(createWebReceiver({ secret: 'whsec_x' }).bodyTimeout).toBe(30_000);
    expect(createReceiver({ secret: 'whsec_x', store: new MemoryDeliveryStore(), bodyTimeout: 5000 }).bodyTimeout).toBe(5000);
    const reply = receiver.refuse(new WebhookVerificationError('body_timeout', 408, 'The request body did not arrive in time.'));
    expect(reply.status).toBe(408);
    expect(reply.headers).toMatchObject({ 'content-type': 'application/problem+json', connection: 'close' });
    expect(JSON.parse(reply.body)).toMatchObject({ code: 'body_timeout', status: 408, retryable: true });
  });

  it('refuses a bodyTimeout that is not a whole number of milliseconds from 1 to 2^31 - 1 with a TypeError naming it', () => {
    for (const bodyTimeout of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '30s', null]) {
      expect(() => createReceiver({ secret: 'whsec_x', store: new MemoryDeliveryStore(), bodyTimeout: bodyTimeout as number })).toThrow(/`bodyTimeout`/);
      expect(() => createWebReceiver({ secret: 'whsec_x', bodyTimeout: bodyTimeout as number })).toThrow(TypeError);
    }
  });
});
