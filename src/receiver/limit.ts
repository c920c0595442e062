import { WebhookVerificationError } from '../protocol/errors.js';
import { MAX_TIMER_MS } from './host-timers.js';

/**
 * The receiver's `bodyTimeout` unless set, in milliseconds. The service does not state how long it waits
 * for a receiver (spec 6.7); senders commonly give up after 10 to 30 s (cliphook's emitter after 10 s),
 * and a webhook body (256 KB at most by default) takes far less on any working link. A body still
 * arriving after 30 s comes from a sender that has given up, or from a client holding the connection.
 */
export const DEFAULT_BODY_TIMEOUT = 30_000;

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/**
 * Turns a size limit (`262144`, `'256kb'`, `'1mb'`) into bytes; throws a TypeError naming the option.
 */
export function parseLimit(limit: unknown, name = 'limit'): number {
  if (typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0) return limit;
  const match = typeof limit === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(limit) : null;
  if (match) {
    const bytes = Math.floor(Number(match[1]) * UNITS[(match[2] ?? 'b').toLowerCase()]!);
    if (bytes > 0) return bytes;
  }
  throw new TypeError(`Expected \`${name}\` to be a positive number of bytes or a size like '256kb', got ${JSON.stringify(limit)}.`);
}

export function tooLarge(limit: number): WebhookVerificationError {
  return new WebhookVerificationError('body_too_large', 413, `The body is larger than the receiver's limit of ${limit} bytes.`);
}

/** The receiver's `bodyTimeout`, checked: a whole number of milliseconds from 1 to 2^31 - 1; a TypeError naming it otherwise. */
export function checkBodyTimeout(ms: unknown): number {
  if (typeof ms === 'number' && Number.isSafeInteger(ms) && ms > 0 && ms <= MAX_TIMER_MS) return ms;
  throw new TypeError(`Expected \`bodyTimeout\` to be a whole number of milliseconds from 1 to ${MAX_TIMER_MS}, got ${JSON.stringify(ms)}.`);
}

/** The refusal of a body still arriving when `bodyTimeout` passed. */
export function bodyTimedOut(ms: number): WebhookVerificationError {
  return new WebhookVerificationError('body_timeout', 408, `The request body did not arrive within the receiver's bodyTimeout of ${ms} ms.`);
}
