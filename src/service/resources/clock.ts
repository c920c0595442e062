import { ServiceError } from '../contract/problems.js';
import type { Accounts } from '../core/accounts.js';
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

  readonly #accounts: Accounts;

  constructor({ clock, store, warn, accounts }: { clock: SimulatedClock; store: ServiceStore<never>; warn: (message: string) => void; accounts: Accounts }) {
    this.#accounts = accounts;
    this.#clock = clock;
    this.#store = store as unknown as ServiceStore<Record<string, never>>;
    this.#warn = warn;
  }

  /**
   * Whose time an advance moves: an API key's own account (`caller`), or with the admin token (`caller`
   * null) the `named` account, or every account's. A key naming another account, or an unknown account, is 400.
   */
  whose(caller: number | null, named: number | undefined): number | null {
    if (caller !== null) {
      if (named !== undefined && named !== caller) throw new ServiceError('invalid_parameter', `An API key moves its own account’s time (${caller}) only; use the admin token for account ${named}.`, { extra: { parameter: 'account' } });
      return caller;
    }
    if (named === undefined) return null;
    if (!this.#accounts.get(named)) throw new ServiceError('invalid_parameter', `No account ${named}.`, { extra: { parameter: 'account' } });
    return named;
  }

  /** GET /test_helpers/clock: `account`'s time (an API key's), or the service's own (`null`, the admin token). */
  view(account: number | null) {
    const clock = this.#clock;
    return {
      object: 'test_clock' as const,
      account,
      now: new Date(clock.nowOf(account)).toISOString(),
      ahead_seconds: account === null ? 0 : clock.leadOf(account) / 1000,
      frozen: clock.frozen,
      // A key sees its own account's timers only: another account's activity is none of its business.
      pending_timers: account === null ? clock.timers : clock.timersOf(account),
    };
  }

  /**
   * POST /test_helpers/clock/advance `{ seconds }`: answers once what it set going has settled. Time cannot
   * be taken back once what fell due has run, so the data file is tried first: when it cannot be written
   * the answer is 503 and the clock has not moved. Once moved, the advance stands even if
   * saving what it did fails then: that is queued and written when the disk lets it.
   */
  async advance(seconds: number, account: number | null) {
    await this.#store.probe();
    await this.#clock.advance(Math.round(seconds * 1000), { account });
    await this.#store.commit().catch((error: Error) => this.#warn(`the clock moved, but saving what it did waits for the disk: ${error.message}`));
    return { ...this.view(account), advanced_seconds: seconds };
  }
}
