import type { RelayError } from '../protocol/errors.js';
import type { Scheduler } from './heartbeat.js';

/** The public shapes of a listener: its options, what it emits. `client.ts` has the behaviour. */

/**
 * How `listen` backs off between reconnects (p-retry's options); jitter is on unless `randomize: false`.
 * The backoff carries over across connections and starts over only after one stayed up 30 s.
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
  /** Signing secret(s): when set, each event says whether its `X-Service-Signature` is valid. */
  secret?: string | readonly string[];
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
  /** With `secret`: whether `X-Service-Signature` matches the body; otherwise `null`. */
  signatureValid: boolean | null;
  /** Caught up from the buffer after (re)connecting. */
  backlog: boolean;
  /** Resent on request (`replay()`). */
  replay: boolean;
  body: Buffer;
}

/** What the local app answered, or why it did not. */
export interface ListenerReply {
  event: ListenerEvent;
  /** The local status, or `null` when the app was unreachable or too slow. */
  status: number | null;
  error: { code: 'local_unreachable' | 'local_timeout'; detail: string } | null;
  durationMs: number;
}

export interface ListenerEvents {
  connected: [info: { channel: string; listener: string }];
  event: [event: ListenerEvent];
  reply: [reply: ListenerReply];
  /** `attempt` 0 when a connection closed, else the failed attempt's number; `delayMs` until the next try. */
  reconnecting: [info: { attempt: number; error: Error; delayMs: number }];
  close: [error: RelayError | null];
}
