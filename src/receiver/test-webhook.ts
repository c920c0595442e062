import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InvalidPayloadError } from '../protocol/errors.js';
import { ERROR_SENTENCES, isWebhookEventName, parseEvent, WEBHOOK_EVENTS, type EventOf, type VideoErrorCode, type WebhookEventName } from '../protocol/events.js';
import { HEADER_DELIVERY, HEADER_EVENT, HEADER_SIGNATURE } from '../protocol/headers.js';
import { assertSecret, sign } from '../protocol/signature.js';
import { packageRoot } from '../version.js';

export interface TestWebhookOptions<N extends WebhookEventName> {
  /** The secret your receiver is configured with. */
  secret: string;
  /** Fields set over the realistic defaults, e.g. `{ error_code: 'content_rejected' }`; checked against spec 2.12. */
  event?: Partial<EventOf<N>>;
  /** `X-Service-Delivery`. @default a fresh `dlv_…` id */
  deliveryId?: string;
  /** Milliseconds since the epoch for `created_at`, `completed_at` and `delivered_at`. @default Date.now() */
  now?: number;
}

/** A request as the service would send it. */
export interface TestWebhook<N extends WebhookEventName> {
  event: EventOf<N>;
  /** The exact bytes that were signed, as text: send them unchanged. */
  body: string;
  /** `content-type` and the three webhook headers. */
  headers: {
    'content-type': 'application/json';
    'x-service-event': N;
    'x-service-delivery': string;
    'x-service-signature': string;
  };
  deliveryId: string;
}

const templates = new Map<WebhookEventName, string>();

/**
 * The event's body from `templates/events/<name>.json` (shipped with the package) with the clip id `id`
 * (a fresh random one by default) and what names it (`video_url`), times around `now`, and no
 * `delivered_at` (each attempt sets its own). `cliphook trigger` starts here.
 */
export function freshEvent(name: WebhookEventName, now: number, id: number = randomInt(100_000, 1_000_000_000)): Record<string, unknown> {
  let text = templates.get(name);
  if (text === undefined) templates.set(name, (text = readFileSync(new URL(`templates/events/${name}.json`, packageRoot), 'utf8')));
  const body = JSON.parse(text) as Record<string, unknown>;
  body.id = id;
  body.created_at = iso(now - 97_000);
  body.completed_at = iso(now);
  delete body.delivered_at;
  if (name === 'video.completed') body.video_url = `https://app.example.com/videos/${body.id}`;
  return body;
}

/**
 * A correctly signed webhook for your own tests: a realistic event of spec 2.12 with your fields over
 * it, the exact body, and the headers the service sends. A `video.failed` with only an `error_code`
 * gets that code's `error` sentence. Throws `InvalidPayloadError` when the fields break the event's
 * shape, so a test cannot send what the service never would.
 * @example
 * const { body, headers } = createTestWebhook('video.failed', { secret, event: { error_code: 'content_rejected' } });
 * await request(app).post('/webhooks').set(headers).send(body).expect(200);  // supertest
 * await receiver.fetch(new Request(url, { method: 'POST', headers, body }));   // Fetch API
 */
export function createTestWebhook<N extends WebhookEventName>(name: N, options: TestWebhookOptions<N>): TestWebhook<N> {
  if (!isWebhookEventName(name)) throw new InvalidPayloadError('event', `\`event\` must be one of ${WEBHOOK_EVENTS.join(', ')}, got ${JSON.stringify(name)}.`);
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected an options object with a `secret`.');
  assertSecret(options.secret);
  const { event: fields = {}, deliveryId = `dlv_${randomBytes(12).toString('hex')}`, now = Date.now() } = options;
  if (typeof deliveryId !== 'string' || deliveryId.length === 0 || deliveryId.length > 255) {
    throw new TypeError(`Expected \`deliveryId\` to be 1-255 characters, got ${JSON.stringify(deliveryId)}.`);
  }
  if (!Number.isFinite(now)) throw new TypeError(`Expected \`now\` to be milliseconds since the epoch, got ${String(now)}.`);
  const id = (fields as { id?: unknown }).id;
  const body: Record<string, unknown> = { ...freshEvent(name, now, typeof id === 'number' ? id : undefined), ...fields, event: name, delivered_at: iso(now) };
  const code = (fields as { error_code?: unknown }).error_code;
  if (name === 'video.failed' && typeof code === 'string' && !('error' in fields)) body.error = ERROR_SENTENCES[code as VideoErrorCode] ?? null;
  const event = parseEvent(body) as EventOf<N>;
  const text = JSON.stringify(event);
  return {
    event,
    body: text,
    headers: {
      'content-type': 'application/json',
      [HEADER_EVENT]: name,
      [HEADER_DELIVERY]: deliveryId,
      [HEADER_SIGNATURE]: sign(text, options.secret),
    } as TestWebhook<N>['headers'],
    deliveryId,
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
