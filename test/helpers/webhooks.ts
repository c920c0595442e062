import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sign, type VideoCompletedEvent, type VideoFailedEvent, type WebhookEvent } from '../../src/index.js';

export const SECRET = 'whsec_test_secret';
let nextId = 1000;

/** A realistic video.completed body (spec 2.12); fields can be overridden. */
export function completedEvent(overrides: Partial<VideoCompletedEvent> = {}): VideoCompletedEvent {
  return {
    event: 'video.completed',
    id: nextId++,
    status: 'done',
    prompt: 'A red fox in the snow',
    video_url: 'https://app.example.com/videos/1',
    error: null,
    error_code: null,
    credits_used: 18,
    duration: 10,
    model: 'standard',
    created_at: '2026-11-21T23:57:12Z',
    completed_at: '2026-11-21T23:58:49Z',
    delivered_at: new Date().toISOString(),
    ...overrides,
  };
}

export function failedEvent(overrides: Partial<VideoFailedEvent> = {}): VideoFailedEvent {
  return {
    event: 'video.failed',
    id: nextId++,
    status: 'error',
    prompt: 'A lighthouse in a storm',
    video_url: null,
    error: 'The service is busy.',
    error_code: 'upstream_busy',
    credits_used: 0,
    duration: 5,
    model: 'cinema',
    created_at: '2026-11-21T23:57:40Z',
    completed_at: '2026-11-21T23:58:05Z',
    delivered_at: new Date().toISOString(),
    ...overrides,
  };
}

export interface SignedRequest {
  body: string;
  headers: Record<string, string>;
}

/** The body and headers the service would send for `event`. */
export function signedRequest(
  event: WebhookEvent | Record<string, unknown>,
  { secret = SECRET, deliveryId = `dlv_${randomUUID()}` }: { secret?: string; deliveryId?: string } = {},
): SignedRequest {
  const body = JSON.stringify(event);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-event': String(event.event),
      'x-service-signature': sign(body, secret),
      'x-service-delivery': deliveryId,
    },
  };
}

/** A fresh temporary folder, removed by the returned cleanup. */
export async function tempDir(): Promise<{ dir: string; file: (name: string) => string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-'));
  return { dir, file: (name) => join(dir, name), cleanup: () => rm(dir, { recursive: true, force: true }) };
}
