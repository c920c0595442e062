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
 * them must not grow (issue 10: 6 cuts in 40 s grew it to 30 s against a healthy relay).
 */
export function healthySession(helloAt: number | null, proved: boolean, closedAt: number): boolean {
  return helloAt !== null && (proved || closedAt - helloAt >= HEALTHY_SESSION_MS);
}

/**
 * The listener's reconnect backoff. It outlives a session (p-retry's state cannot, hence our own): a
 * healthy session starts it over and is followed by an immediate reconnect, and a close for something the
 * listener sent (1008/1009/1011) always waits first, so a relay that keeps refusing a reply is not hit in a loop.
 */
export class ReconnectBackoff {
  readonly #options: Required<ReconnectOptions>;
  /** Consecutive failed connects and short or refused sessions: what the next wait grows with. */
  #failures = 0;

  constructor(options: Required<ReconnectOptions>) {
    this.#options = options;
  }

  /** The wait after a connect that failed. */
  afterFailedConnect(): number {
    return reconnectDelay(++this.#failures, this.#options);
  }

  /** The wait after a session closed with `code`; `healthy` as `healthySession` says. */
  afterSession(healthy: boolean, code: number): number {
    if (healthy) this.#failures = 0;
    return !healthy || BACK_OFF_CODES.has(code) ? reconnectDelay(++this.#failures, this.#options) : 0;
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
