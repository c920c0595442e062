import { CLOSE } from './frames.js';
import type { ReconnectOptions } from './listener-types.js';

/** A connection up this long after the relay's hello is healthy even if no pong came. */
export const HEALTHY_SESSION_MS = 5_000;

/** Closes that reconnecting at once would only repeat: the relay refused what this listener sent, or failed on it. */
const BACK_OFF_CODES: ReadonlySet<number> = new Set([CLOSE.policy, CLOSE.tooBig, CLOSE.internalError]);

/**
 * The wait before reconnecting after `failures` consecutive failures (from 1), as p-retry computes it:
 * `minTimeout * factor^(failures - 1)`, times a random 1-2 with `randomize`, at most `maxTimeout`.
 */
export function reconnectDelay(failures: number, { minTimeout, maxTimeout, factor, randomize }: Required<ReconnectOptions>, random = Math.random): number {
  const base = minTimeout * factor ** Math.max(0, failures - 1);
  return Math.round(Math.min(maxTimeout, randomize ? base * (1 + random()) : base));
}

/**
 * Whether a connection that closed at `closedAt` was healthy: the relay said hello, then answered a ping
 * (`proved`) or kept it up `HEALTHY_SESSION_MS`. A flaky network cuts healthy connections; the wait after
 * them must not grow (else 6 cuts in 40 s would grow it to 30 s against a healthy relay).
 */
export function healthySession(helloAt: number | null, proved: boolean, closedAt: number): boolean {
  return helloAt !== null && (proved || closedAt - helloAt >= HEALTHY_SESSION_MS);
}

/** What a closed connection did: what the wait before the next one depends on. */
export interface SessionRecord {
  /** When the relay said hello, by the listener's clock; `null` when it never did. */
  helloAt: number | null;
  /** A pong came after the hello. */
  proved: boolean;
  /** Events the relay sent on it. */
  events: number;
  /** When it closed, by the listener's clock. */
  closedAt: number;
  /** Its close code. */
  code: number;
}

/**
 * The listener's reconnect backoff. It outlives a session (p-retry's state cannot, hence our own): a
 * healthy session starts it over, and a close for something the listener sent (1008/1009/1011) always
 * waits first, so a relay that keeps refusing a reply is not hit in a loop. Only a healthy session that
 * did something (up `HEALTHY_SESSION_MS`, or carried an event) is followed by an immediate reconnect: one
 * that said hello, answered the ping and dropped would otherwise buy a handshake and a catch-up in a
 * tight loop, so after it the listener waits the shortest delay (`reconnectDelay(1)`, with its jitter).
 */
export class ReconnectBackoff {
  readonly #options: Required<ReconnectOptions>;
  readonly #random: () => number;
  /** Consecutive failed connects and short or refused sessions: what the next wait grows with. */
  #failures = 0;

  constructor(options: Required<ReconnectOptions>, random: () => number = Math.random) {
    this.#options = options;
    this.#random = random;
  }

  /** The wait after a connect that failed. */
  afterFailedConnect(): number {
    return reconnectDelay(++this.#failures, this.#options, this.#random);
  }

  /** The wait after `session` closed. */
  afterSession({ helloAt, proved, events, closedAt, code }: SessionRecord): number {
    const healthy = healthySession(helloAt, proved, closedAt);
    if (healthy) this.#failures = 0;
    if (!healthy || BACK_OFF_CODES.has(code)) return reconnectDelay(++this.#failures, this.#options, this.#random);
    const lasted = helloAt !== null && closedAt - helloAt >= HEALTHY_SESSION_MS;
    return lasted || events > 0 ? 0 : reconnectDelay(1, this.#options, this.#random);
  }
}

/** Waits `ms`, or less when `signal` aborts: the listener's wait between reconnects. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    // Not unref'd: between attempts this timer is all that keeps `listen` alive.
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
