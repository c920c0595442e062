import type { RelayError } from '../protocol/errors.js';
import type { RawHeaders } from './frames.js';
import type { Scheduler } from './heartbeat.js';

/** The public shapes of a listener: its options, what it emits. `client.ts` has the behaviour. */

/**
 * How `listen` backs off between reconnects (p-retry's options); jitter is on unless `randomize: false`.
 * The backoff carries over across connections and starts over after a healthy one: the relay said hello
 * and then answered a ping, or the connection stayed up 5 s.
 */
export interface ReconnectOptions {
  /** @default 500 */
  minTimeout?: number;
  /** @default 30_000 */
  maxTimeout?: number;
  /** @default 2 */
  factor?: number;
  /** Multiplies each delay by a random 1-2, so many listeners do not reconnect in step. @default true */
  randomize?: boolean;
}

export interface ListenerOptions {
  /** The relay's base URL. @example 'https://relay.example.com' */
  relayUrl: string;
  /** The channel id from `createChannel`. */
  channel: string;
  /** The channel's listening token. */
  token: string;
  /** The local URL events are POSTed to; an event's extra path and query are appended. @example 'http://localhost:3000/webhooks' */
  forwardTo: string;
  /**
   * Signing secret(s). When set, an event whose `X-Service-Signature` does not verify is answered by the
   * listener as the receiver would (401 `invalid_signature` or `missing_signature`, 400 `malformed_signature`
   * for a malformed or repeated header) and never reaches the local app, and an authentic event that waited
   * at the relay is re-signed with a fresh `delivered_at` (by the secret its signature verified under, so
   * an old secret never vouches for the new one). Without it, anyone who has the channel URL can send the
   * local app anything it accepts.
   */
  secret?: string | readonly string[];
  /**
   * With `secret`: forward events whose signature does not verify anyway (they are still marked
   * `signatureValid: false`). For debugging signatures only. @default false
   */
  forwardInvalid?: boolean;
  /**
   * HTTP methods forwarded to the local app; any other is answered 405 `method_not_allowed` (with `Allow`)
   * by the listener. Webhooks are POSTs: every method added lets whoever has the channel URL call that
   * method on the local app and read its reply. @default ['POST']
   */
  methods?: readonly string[];
  /** Only these `X-Service-Event` names are sent to this listener (the relay filters). @default all */
  events?: readonly string[];
  /** How long the local app may take; below the relay's reply timeout so the sender learns why. @default 8_500 */
  localTimeoutMs?: number;
  /** Largest local reply carried back. @default 1048576 */
  maxReplyBytes?: number;
  /** Backoff between reconnects. */
  reconnect?: ReconnectOptions;
  /** How often the listener pings the relay. @default 10_000 */
  pingIntervalMs?: number;
  /** A relay silent for longer is taken for dead and the listener reconnects. @default 20_000 */
  readDeadlineMs?: number;
  /** @default Date.now */
  clock?: () => number;
  /** @default real, unref'd timers */
  scheduler?: Scheduler;
}

/** One event as it arrives from the relay, before it is forwarded. */
export interface ListenerEvent {
  seq: number;
  method: string;
  /** The local URL it goes to. */
  url: string;
  /** `X-Service-Event`, or `null`. */
  eventName: string | null;
  /** `X-Service-Delivery`, or `null`. */
  deliveryId: string | null;
  /** With `secret`: whether `X-Service-Signature` matches the body as the sender sent it; otherwise `null`. */
  signatureValid: boolean | null;
  /**
   * The listener gave it a fresh `delivered_at` and signature before forwarding (with `secret`, an
   * authentic event that waited at the relay past the receiver's replay window).
   */
  resigned: boolean;
  /** Caught up from the buffer after (re)connecting. */
  backlog: boolean;
  /** Resent on request (`replay()`). */
  replay: boolean;
  /** The body bytes sent to the local app: as the sender sent them, but for `delivered_at` when `resigned`. */
  body: Buffer;
  /** The end-to-end headers sent with it (raw: name, value, …), `X-Service-Signature` re-made when `resigned`. */
  headers: RawHeaders;
  /** When the relay took the request (ms since the epoch, the relay's clock). */
  receivedAt: number;
}

/** Why the listener answered an event itself instead of forwarding it. */
export type ListenerRefusalCode = 'method_not_allowed' | 'invalid_path' | 'invalid_signature' | 'missing_signature' | 'malformed_signature';

/** What the local app answered, or why it did not. */
export interface ListenerReply {
  event: ListenerEvent;
  /** The status the sender gets: the local app's, or the listener's own refusal; `null` when the app was unreachable or too slow. */
  status: number | null;
  error: { code: 'local_unreachable' | 'local_timeout'; detail: string } | null;
  /**
   * Set when the listener answered the event itself with a problem body: the local app never saw it.
   * `detail` is listen's own reason, which may name the local path; the sender reads a fixed sentence.
   */
  refused: { code: ListenerRefusalCode; detail: string } | null;
  /**
   * The local app refused the event as stale (400 `stale_delivery`) and, without `secret` to re-sign it,
   * the listener did not take that as the answer: a caught-up event stays buffered at the relay for the
   * next connection, and a live event's sender gets 502 and retries with a fresh `delivered_at`.
   */
  stale: boolean;
  /** Whole milliseconds from forwarding to the reply. */
  durationMs: number;
  /** The reply's headers (raw) and body as the sender gets them: the local app's, or listen's own refusal; empty when `status` is `null`. */
  headers: RawHeaders;
  body: Buffer;
}

export interface ListenerEvents {
  connected: [info: { channel: string; listener: string }];
  event: [event: ListenerEvent];
  reply: [reply: ListenerReply];
  /** `attempt` 0 when a connection closed, else the failed attempt's number; `delayMs` until the next try. */
  reconnecting: [info: { attempt: number; error: Error; delayMs: number }];
  close: [error: RelayError | null];
}
