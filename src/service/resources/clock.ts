import type { SimulatedClock } from '../core/clock.js';
import type { ServiceStore } from '../core/store.js';

/**
 * The simulated clock's test helpers (Stripe's test clocks): what time it is for the service, and moving
 * it forward, firing on the way, each at its own instant, what falls due: clips that finish, moderation
 * that ends, webhook retries, and links and windows that expire.
 */
export class ClockCommands {
  readonly #clock: SimulatedClock;
  readonly #store: ServiceStore<Record<string, never>>;
  readonly #warn: (message: string) => void;

  constructor({ clock, store, warn }: { clock: SimulatedClock; store: ServiceStore<never>; warn: (message: string) => void }) {
    this.#clock = clock;
    this.#store = store as unknown as ServiceStore<Record<string, never>>;
    this.#warn = warn;
  }

  /** GET /test_helpers/clock */
  view() {
    const clock = this.#clock;
    return { object: 'test_clock' as const, now: new Date(clock.now()).toISOString(), frozen: clock.frozen, pending_timers: clock.timers };
  }

  /**
   * POST /test_helpers/clock/advance `{ seconds }`: answers once what it set going has settled. Time cannot
   * be taken back once what fell due has run, so the data file is tried first: when it cannot be written
   * the answer is 503 and the clock has not moved (issue 20 item 9). Once moved, the advance stands even if
   * saving what it did fails then: that is queued and written when the disk lets it.
   */
  async advance(seconds: number) {
    await this.#store.probe();
    await this.#clock.advance(Math.round(seconds * 1000));
    await this.#store.commit().catch((error: Error) => this.#warn(`the clock moved, but saving what it did waits for the disk: ${error.message}`));
    return { ...this.view(), advanced_seconds: seconds };
  }
}
