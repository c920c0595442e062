// Verification rules that need no crypto and no Node: headers, delivery id, JSON shape, replay window.
// verify.ts (node:crypto, sync) and web-verify.ts (Web Crypto, async) run the signature check, then these.
import { InvalidPayloadError, WebhookVerificationError } from '../protocol/errors.js';
import { parseEvent, type WebhookEvent } from '../protocol/events.js';
import { HEADER_DELIVERY, HEADER_EVENT, HEADER_SIGNATURE } from '../protocol/headers.js';
import { assertSecret, type SignatureCheck } from '../protocol/signature-form.js';

/**
 * Request headers as Node (`req.headers`) or the Fetch API (`Headers`) give them, or anything with a
 * `get(name)` that answers for a lowercase name.
 */
export type HeaderSource = Pick<Headers, 'get'> | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** The signing secret, or several during a rotation (`[new, old]`). */
  secret: string | readonly string[];
  /**
   * How far `delivered_at` may be from now, in seconds, either way; `false` turns the check off.
   * @default 300
   */
  tolerance?: number | false;
  /** Milliseconds since the epoch. @default Date.now() */
  now?: number;
}

/** A webhook whose signature, shape and freshness were checked. */
export interface VerifiedWebhook<E extends WebhookEvent = WebhookEvent> {
  /** `X-Service-Delivery`: the same on every attempt of one delivery. */
  deliveryId: string;
  event: E;
}

/** What the receiver keeps of a verified request: also the body as text, decoded once. */
export interface VerifiedRequest extends VerifiedWebhook {
  text: string;
}

/** Reads one header; several values (an array, as Node gives repeated headers) come back as they are. */
export function readHeader(headers: HeaderSource, name: string): string | readonly string[] | undefined {
  if (typeof headers.get === 'function') return (headers as Pick<Headers, 'get'>).get(name) ?? undefined;
  const record = headers as Record<string, string | readonly string[] | undefined>;
  return record[name] ?? findCaseInsensitive(record, name);
}

function findCaseInsensitive(record: Record<string, string | readonly string[] | undefined>, name: string) {
  for (const key of Object.keys(record)) if (key.toLowerCase() === name) return record[key];
  return undefined;
}

/** Throws a TypeError naming the option unless `secret` is a non-empty string or array of them. */
export function normaliseSecrets(secret: unknown): readonly string[] {
  const list = Array.isArray(secret) ? secret : [secret];
  if (list.length === 0) throw new TypeError('Expected `secret` to be a non-empty string or a non-empty array of them, got [].');
  list.forEach((value) => assertSecret(value));
  return Object.freeze([...(list as string[])]);
}

/** Throws a TypeError unless `tolerance` is `false` or a non-negative number of seconds. */
export function checkTolerance(tolerance: unknown): number | false {
  if (tolerance === false) return false;
  if (typeof tolerance === 'number' && Number.isFinite(tolerance) && tolerance >= 0) return tolerance;
  throw new TypeError(`Expected \`tolerance\` to be a non-negative number of seconds or false, got ${String(tolerance)}.`);
}

/** The `X-Service-Signature` value; throws `missing_signature` when there is none. */
export function signatureHeader(headers: HeaderSource): string | readonly string[] {
  const header = readHeader(headers, HEADER_SIGNATURE);
  if (header === undefined || header === '') {
    throw new WebhookVerificationError('missing_signature', 401, 'The X-Service-Signature header is missing.');
  }
  return header;
}

/** Throws for a signature that is malformed or matches no secret. */
export function assertSignatureValid(check: SignatureCheck): void {
  if (check === 'malformed') {
    throw new WebhookVerificationError('malformed_signature', 400, 'X-Service-Signature must be one value of the form sha256=<64 hex digits>.');
  }
  if (check === 'invalid') {
    throw new WebhookVerificationError('invalid_signature', 401, 'X-Service-Signature does not match the body under any configured secret.');
  }
}

/**
 * The checks after a valid signature: one delivery id, a body of the shape of spec 2.12 whose event the
 * `X-Service-Event` header agrees with, and a `delivered_at` within the window. `decode` turns the body
 * into text and throws on invalid UTF-8.
 */
export function verifySigned(
  rawBody: Uint8Array | string,
  headers: HeaderSource,
  tolerance: number | false,
  now: number,
  decode: (bytes: Uint8Array) => string,
): VerifiedRequest {
  const deliveryId = readHeader(headers, HEADER_DELIVERY);
  if (typeof deliveryId !== 'string' || deliveryId.length === 0 || deliveryId.length > 255) {
    throw new WebhookVerificationError('missing_delivery_id', 400, 'X-Service-Delivery must be one value of 1-255 characters.');
  }
  // Node and the Fetch API join a repeated header with ", " (a signature sent twice is malformed the same
  // way): two delivery ids would make the dedupe key ambiguous.
  if (deliveryId.includes(',')) {
    throw new WebhookVerificationError('missing_delivery_id', 400, 'X-Service-Delivery was sent more than once (or holds a comma); send it once.');
  }
  let text: string;
  let value: unknown;
  try {
    text = typeof rawBody === 'string' ? rawBody : decode(rawBody);
    value = JSON.parse(text);
  } catch {
    throw new WebhookVerificationError('invalid_json', 400, 'The body is not valid UTF-8 JSON.');
  }
  let event: WebhookEvent;
  try {
    event = parseEvent(value);
  } catch (error) {
    // parseEvent throws only InvalidPayloadError; anything else (a stack overflow on a hostile body) is
    // still a bad payload, never a 500.
    const detail = error instanceof InvalidPayloadError ? error.message : 'The body does not have the shape of a webhook.';
    throw new WebhookVerificationError('invalid_payload', 400, detail);
  }
  const named = readHeader(headers, HEADER_EVENT);
  if (named !== undefined && named !== event.event) {
    throw new WebhookVerificationError('invalid_payload', 400, `X-Service-Event says ${String(named)} but the signed body says ${event.event}.`);
  }
  if (tolerance !== false) {
    const skew = Math.abs(now - Date.parse(event.delivered_at));
    if (skew > tolerance * 1000) {
      throw new WebhookVerificationError(
        'stale_delivery',
        400,
        `delivered_at is ${Math.round(skew / 1000)} s from this server's clock; the window is ${tolerance} s.`,
      );
    }
  }
  return { deliveryId, event, text };
}
