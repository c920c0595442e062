import type { Account, Accounts } from './accounts.js';

// Balances: the one place a balance changes, apart from the accounts and keys it is kept with (STYLE: one
// concern a module).

/** Refused: the balance cannot cover `required` (spec 7: 402 with `required` and `balance`). */
export interface Shortfall {
  required: number;
  balance: number;
}

/**
 * Balances, in one place. Every change is synchronous in memory (one event loop turn, so concurrent
 * requests cannot both spend the same credits) and journalled with the account; the caller awaits the
 * store's commit before answering. A balance never goes below zero.
 */
export class Credits {
  readonly #accounts: Accounts;

  constructor(accounts: Accounts) {
    this.#accounts = accounts;
  }

  /** Takes `amount` from the balance and counts the `clips` it pays for, or says how much is missing and changes nothing. */
  charge(account: Account, amount: number, clips = 0): Shortfall | null {
    assertCredits(amount);
    if (account.balance < amount) return { required: amount, balance: account.balance };
    account.balance -= amount;
    account.usage.creditsSpent += amount;
    // Counted here, before the save: a count changed after it would reach the journal only with the next save.
    account.usage.videosCreated += clips;
    this.#accounts.save(account);
    return null;
  }

  /** Gives `amount` back (a refund of a failed or cancelled task). */
  refund(account: Account, amount: number): void {
    assertCredits(amount);
    account.balance += amount;
    account.usage.creditsRefunded += amount;
    this.#accounts.save(account);
  }

  /** Adds bought credits (account settings). */
  topUp(account: Account, amount: number): void {
    assertCredits(amount);
    account.balance += amount;
    account.toppedUp = true;
    this.#accounts.save(account);
  }
}

function assertCredits(amount: number): void {
  if (!(Number.isSafeInteger(amount) && amount >= 0)) throw new RangeError(`Expected a whole number of credits >= 0, got ${amount}.`);
}
