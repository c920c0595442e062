import { randomBytes } from 'node:crypto';
import type { WebhookEventName } from '../protocol/events.js';
import { assertSecret } from '../protocol/signature.js';
import { serialisePayload } from './payload.js';
import type { DeliveryRecord, EmitterClock } from './types.js';
import { checkCallbackUrl } from './url-guard.js';

/** What `send()` takes. */
export interface SendInput {
  /** The callback URL: https, at most 2048 characters, no credentials, a public address. */
  url: string;
  /** The signing secret; `X-Service-Signature` is its HMAC-SHA256 of each attempt's body. */
  secret: string;
  event: WebhookEventName;
  /** The event body of spec 2.12; `delivered_at` is set by each attempt and `event` from `event`. */
  payload: Record<string, unknown>;
  /** `false`: one attempt only, whatever its outcome. @default true */
  retry?: boolean;
  /**
   * The delivery id (`X-Service-Delivery`), for a sender that must not enqueue one event twice: a second
   * `send()` with an id the emitter still holds returns that delivery and sends nothing. `dlv_` and 8-64
   * letters, digits, `_` or `-`. @default a random one
   */
  id?: string;
}

/** The form of a caller's own delivery id. */
export const DELIVERY_ID = /^dlv_[A-Za-z0-9_-]{8,64}$/;

/**
 * Checks what `send()` got and makes the pending record of a new delivery, due now. Throws before
 * anything is stored: a `TypeError`, or the URL guard's or the secret check's error.
 */
export function createRecord(input: SendInput, { allowPrivateNetworks, clock }: { allowPrivateNetworks: boolean; clock: EmitterClock }): DeliveryRecord {
  if (typeof input !== 'object' || input === null) throw new TypeError('Expected `send()` to get { url, secret, event, payload }.');
  const { secret, event, payload, retry = true } = input;
  // Stored as parsed: `https://@host` or `https://:@host` (empty credentials) is kept as `https://host/`,
  // so what is shown and re-checked is what is connected to.
  const url = checkCallbackUrl(input.url, { allowPrivateNetworks }).href;
  assertSecret(secret);
  if (typeof retry !== 'boolean') throw new TypeError(`Expected \`retry\` to be a boolean, got ${JSON.stringify(retry)}.`);
  if (input.id !== undefined && (typeof input.id !== 'string' || !DELIVERY_ID.test(input.id))) {
    throw new TypeError(`Expected \`id\` to be dlv_ and 8-64 letters, digits, _ or -, got ${JSON.stringify(input.id)}.`);
  }
  const now = clock.now();
  return {
    id: input.id ?? `dlv_${randomBytes(12).toString('hex')}`,
    url, secret, event, state: 'pending', retry, createdAt: now, nextAttemptAt: now, round: 0, attempts: [],
    payload: serialisePayload(event, payload, now),
  };
}
