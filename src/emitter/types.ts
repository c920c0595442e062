import type { WebhookEventName } from '../protocol/events.js';

/**
 * Where a delivery stands: `pending` waits for its next attempt (the first one included), `delivering`
 * has an attempt in flight, `delivered` got a 2xx, `failed` got a 4xx or ran out of attempts.
 */
export type DeliveryState = 'pending' | 'delivering' | 'delivered' | 'failed';

/** One POST of a delivery, as recorded after it ended. */
export interface DeliveryAttempt {
  /** When the attempt started, in milliseconds since the epoch (read from the emitter's clock). */
  at: number;
  /** The HTTP status, or `null` when no status came back (timeout, connection error, refused address). */
  status: number | null;
  /** Why no status came back (or why the reply counted as a failure before the status), else `null`. */
  error: string | null;
  /** Milliseconds from the start of the attempt to the end of the response (or the error). */
  latencyMs: number;
  /** The first 1 KiB of the response body, decoded as UTF-8; `null` when there was no response. */
  response: string | null;
}

/** A delivery as the emitter shows it: one event sent to one URL. The signing secret is never shown. */
export interface Delivery {
  /** `dlv_…`: the `X-Service-Delivery` value, the same on every attempt and every redelivery. */
  id: string;
  url: string;
  event: WebhookEventName;
  state: DeliveryState;
  /** The event body without `delivered_at`, which every attempt sets to its own time. */
  payload: Record<string, unknown>;
  /** Every attempt so far, oldest first, redeliveries included. */
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (ms since the epoch); `null` unless `pending`. */
  nextAttemptAt: number | null;
  /** When `send()` accepted it (ms since the epoch). */
  createdAt: number;
  /** `false` when the delivery gets one attempt only, whatever its outcome. */
  retry: boolean;
}

/**
 * A delivery as an outbox stores it. The emitter owns the object and mutates it in place; it calls
 * `save()` after every change, so an outbox may keep the reference and serialise it at write time.
 */
export interface DeliveryRecord {
  id: string;
  url: string;
  /** Needed to sign the retries after a restart, so the outbox holds it: keep the file private. */
  secret: string;
  event: WebhookEventName;
  state: DeliveryState;
  retry: boolean;
  createdAt: number;
  nextAttemptAt: number | null;
  /** Index in `attempts` where the current schedule began: 0, or the attempt count at the last redelivery. */
  round: number;
  attempts: DeliveryAttempt[];
  /** The payload serialised once at `send()`: a JSON object without `delivered_at`. */
  payload: string;
}

/**
 * Time, as the emitter reads and waits for it. Tests pass a fake to walk the retry schedule without
 * sleeping.
 */
export interface EmitterClock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Where the emitter reports what it cannot throw: failed writes of the outbox, listener errors. */
export interface EmitterLogger {
  info(message: string, details?: Record<string, unknown>): void;
  warn(message: string, details?: Record<string, unknown>): void;
  error(message: string, details?: Record<string, unknown>): void;
}

/**
 * The real clock: `Date.now` and the global timers.
 * @example createEmitter({ clock: systemClock }) // the default
 */
export const systemClock: EmitterClock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms),
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** The default logger: warnings and errors to the console, nothing else. */
export const consoleLogger: EmitterLogger = Object.freeze({
  info: () => undefined,
  warn: (message: string, details?: Record<string, unknown>) => console.warn(`cliphook emitter: ${message}`, details ?? ''),
  error: (message: string, details?: Record<string, unknown>) => console.error(`cliphook emitter: ${message}`, details ?? ''),
});
