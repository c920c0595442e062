import { ServiceError } from '../../contract/problems.js';
import type { Account, Accounts } from '../../core/accounts.js';

const iso = (ms: number) => new Date(ms).toISOString();

export interface TestAccountCommandsOptions {
  accounts: Accounts;
  /** The balance a new account starts with when the request names none: the service's (`--balance`, 1000). */
  startingBalance: () => number;
  /**
   * Removes the rows an account owns besides its own and its keys (clips, assets, image jobs, upload links,
   * `Idempotency-Key` records, assistants), inside the request's unit of work, and returns
   * what to do once that removal is saved (remove their files). @default nothing else is owned
   */
  owned?: (id: number) => () => void;
  /** Saves the removal before anything outside the data file goes. @default nothing to save */
  commit?: () => Promise<void>;
  /**
   * Told an account was deleted, once that is saved: its own time and timers, fault rules and journal entries go
   * too.
   */
  forgotten?: (id: number) => void;
}

/**
 * Accounts on demand: what `POST/GET/DELETE /test_helpers/accounts` do, without HTTP. Each
 * account has its own key, webhook secret, balance, rate window, idempotency records and daily limits, as
 * every command already scopes them by account.
 */
export class TestAccountCommands {
  readonly #options: TestAccountCommandsOptions;

  constructor(options: TestAccountCommandsOptions) {
    this.#options = options;
  }

  /** A new account with one key: its key and webhook secret are shown here, once. */
  create({ balance, name }: { balance?: number | undefined; name?: string | undefined }) {
    const { account, key } = this.#options.accounts.create({ balance: balance ?? this.#options.startingBalance(), ...(name === undefined ? {} : { name }) });
    return { id: account.id, name: nameOf(account), api_key: key.token, webhook_secret: key.webhookSecret, balance: account.balance };
  }

  /** Every account, oldest first, without secrets. */
  list() {
    return {
      data: this.#options.accounts.all().map((account) => ({ id: account.id, name: nameOf(account), balance: account.balance, default: account.id === 1, created_at: iso(account.createdAt) })),
    };
  }

  /**
   * Deletes an account and all it owns: its keys are 401 at once, its clips' webhooks no
   * longer go, and its rows leave the data file. Nothing outside the data file (files, fault rules, journal,
   * its time) goes until that is saved, so a failed write takes the whole removal back. The configured
   * first account stays (reset brings it back to its start): deleting it is 400.
   */
  async remove(id: number) {
    if (!this.#options.accounts.get(id)) throw new ServiceError('not_found', `No account ${id}.`);
    if (id === 1) throw new ServiceError('invalid_parameter', 'The configured first account (1) cannot be deleted; POST /test_helpers/reset brings it back to its start.', { extra: { parameter: 'id' } });
    this.#options.accounts.remove(id);
    const saved = this.#options.owned?.(id);
    await this.#options.commit?.();
    saved?.();
    this.#options.forgotten?.(id);
    return { id, deleted: true as const };
  }
}

function nameOf(account: Account): string {
  return account.name ?? (account.id === 1 ? 'default' : `account_${account.id}`);
}
