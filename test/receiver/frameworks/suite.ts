import type { AddressInfo, Server } from 'node:net';
import { expect, it, vi } from 'vitest';
import { MemoryDeliveryStore, createReceiver, createTestWebhook, type VideoCompletedEvent, type WebhookContext, type WebhookReceiver } from '../../../src/index.js';

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

export function newReceiver(): WebhookReceiver {
  return createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), limit: LIMIT });
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

/**
 * The checks every adapter passes: a signed webhook, a duplicate, a bad signature, and an oversized body
 * (declared, and streamed when `chunked`). The parsed-body mistake differs per framework: each file has its own.
 */
export function frameworkChecks(mount: (receiver: WebhookReceiver) => Promise<Mounted>, { chunked = true } = {}): void {
  async function withMounted(run: (mounted: Mounted, receiver: WebhookReceiver) => Promise<void>): Promise<void> {
    const receiver = newReceiver();
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
}
