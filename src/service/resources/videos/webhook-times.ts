import type { DeliveryRecord, WebhookEmitter } from '../../../emitter/index.js';
import type { LaneSource, SimulatedClock } from '../../core/clock.js';

/** Deliveries whose account's time is remembered at once; the oldest are forgotten first (their retries then wait for the service's time). */
export const MAX_TIMED_DELIVERIES = 10_000;

export interface WebhookTimesOptions {
  clock: SimulatedClock;
  /** The account whose key signs with `secret` (its current or previous webhook secret). */
  accountOf: (secret: string) => number | undefined;
  /** The service's emitter, once made. */
  emitter: () => WebhookEmitter | undefined;
  warn: (message: string) => void;
}

/**
 * Webhooks on their account's time. The emitter keeps one queue on the service's time, so this
 * does the two things an account's own time needs of it: each attempt's `delivered_at` is the account's
 * time (the emitter's stamp), and an account's `advance()` brings its deliveries' retries when they fall due
 * on its time, in order with its clips' timers (a lane source of the clock). A retry scheduled at service
 * time R by an attempt made while the account was L ahead falls due at R + L on the account's time.
 */
export class WebhookTimes implements LaneSource {
  readonly #options: WebhookTimesOptions;
  /** The account of each delivery attempted, and how far ahead its time was at its latest attempt. */
  readonly #attempts = new Map<string, { account: number; lead: number }>();
  /** Deliveries being brought forward now, with their account: not offered again until the emitter has taken them. */
  readonly #firing = new Map<string, number>();
  /** Deliveries whose attempt began (the emitter's stamp) and has not ended, with their account. */
  readonly #attempting = new Map<string, number>();
  /** The account of each delivery handed to the emitter (its clip's), so a rotated-away secret still finds it. */
  readonly #owners = new Map<string, number>();
  /** The `nextAttemptAt` each delivery had when it was last brought forward: one that did not change made no progress. */
  readonly #brought = new Map<string, number | null>();

  constructor(options: WebhookTimesOptions) {
    this.#options = options;
  }

  /** Remembers whose delivery `id` is (the service hands each clip's webhook to the emitter with it). */
  track(id: string, account: number): void {
    this.#owners.delete(id);
    this.#owners.set(id, account);
    while (this.#owners.size > MAX_TIMED_DELIVERIES) this.#owners.delete(this.#owners.keys().next().value!);
  }

  /** The emitter's stamp: the account's time for an attempt of `record`, remembering how far ahead it is. */
  stamp(record: DeliveryRecord): number | undefined {
    const { clock, accountOf } = this.#options;
    const account = this.#owners.get(record.id) ?? accountOf(record.secret);
    if (account === undefined) return undefined;
    this.#attempts.delete(record.id);
    this.#attempts.set(record.id, { account, lead: clock.leadOf(account) });
    while (this.#attempts.size > MAX_TIMED_DELIVERIES) this.#attempts.delete(this.#attempts.keys().next().value!);
    this.#attempting.set(record.id, account);
    while (this.#attempting.size > MAX_TIMED_DELIVERIES) this.#attempting.delete(this.#attempting.keys().next().value!);
    return clock.nowOf(account);
  }

  /** An attempt of delivery `id` ended (the emitter's `attempt` event). */
  ended(id: string): void {
    this.#attempting.delete(id);
  }

  next(account: number): number | undefined {
    let earliest: number | undefined;
    for (const { id, due } of this.#pending(account)) if (!this.#firing.has(id) && (earliest === undefined || due < earliest)) earliest = due;
    return earliest;
  }

  fire(account: number): void {
    const emitter = this.#options.emitter();
    if (!emitter) return;
    const now = this.#options.clock.nowOf(account);
    for (const { id, due } of this.#pending(account)) {
      if (due > now || this.#firing.has(id)) continue;
      this.#firing.set(id, account);
      this.#brought.set(id, emitter.get(id)?.nextAttemptAt ?? null);
      emitter
        .redeliver(id)
        .catch((error: Error) => this.#options.warn(`cannot bring the webhook retry ${id} forward: ${error.message}`))
        .finally(() => this.#firing.delete(id));
    }
  }

  /** Whether a retry is being brought forward now (its outbox write): `clock.advance()` waits for it. */
  get busy(): boolean {
    return this.#firing.size > 0;
  }

  /**
   * Whether a retry of `account` is being brought forward, or an attempt of its webhooks is in flight:
   * what its own advance waits for, not what other accounts' webhooks do.
   */
  busyOf(account: number): boolean {
    for (const owner of this.#firing.values()) if (owner === account) return true;
    // An attempt whose end was never told (a record the emitter could not update) holds nobody once the emitter is idle.
    const inFlight = (this.#options.emitter()?.stats as { inFlight?: number } | undefined)?.inFlight ?? 0;
    if (inFlight === 0) return false;
    for (const owner of this.#attempting.values()) if (owner === account) return true;
    return false;
  }

  /** Forgets every delivery (a reset). */
  clear(): void {
    this.#attempts.clear();
    this.#attempting.clear();
    this.#owners.clear();
    this.#brought.clear();
  }

  /** The account's deliveries waiting for a retry, each with when it is due on the account's time; finished ones are forgotten. */
  *#pending(account: number): Generator<{ id: string; due: number }> {
    const emitter = this.#options.emitter();
    if (!emitter) return;
    for (const [id, attempt] of this.#attempts) {
      if (attempt.account !== account) continue;
      const delivery = emitter.get(id);
      if (!delivery || delivery.state === 'delivered' || delivery.state === 'failed') {
        this.#attempts.delete(id);
        this.#owners.delete(id);
        this.#brought.delete(id);
        continue;
      }
      // Brought forward already and still waiting at the same time (the outbox write failed, or every
      // slot is busy): not offered again; the emitter's own timer still sends it.
      if (this.#brought.has(id) && this.#brought.get(id) === delivery.nextAttemptAt) continue;
      if (delivery.state === 'pending' && delivery.nextAttemptAt !== null) yield { id, due: delivery.nextAttemptAt + attempt.lead };
    }
  }
}
