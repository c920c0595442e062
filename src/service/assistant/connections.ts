import { randomBytes } from 'node:crypto';
import { LIMITS } from '../contract/limits.js';
import { MAX_DAILY_LIMIT } from '../contract/settings.js';
import type { Account, ApiKey } from '../core/accounts.js';
import type { ServiceStore, Table, TableIndex } from '../core/store.js';

/**
 * One assistant connected to an account: a bearer API key used on `/mcp`, or an assistant the account
 * holder approved through OAuth. Its daily credit limit and running clips are counted per connection.
 */
export interface AssistantRow {
  id: string;
  accountId: number;
  kind: 'api_key' | 'oauth';
  /** The API key (kind `api_key`). */
  keyId: string | null;
  /** The OAuth grant and client (kind `oauth`). */
  grantId: string | null;
  clientId: string | null;
  /** What the settings show: the client's name, or the key's hint. */
  name: string;
  /** Credits per rolling 24 hours, or null for the default (30; 10 until the account's first top-up). */
  dailyLimit: number | null;
  createdAt: number;
  disconnectedAt: number | null;
}

export type ConnectionTables = { assistant: AssistantRow };

/** The default daily limits (spec 5.7 and 8) and the highest one the settings accept. */
export const DAILY_LIMITS = Object.freeze({ default: LIMITS.assistant.dailyLimit, beforeTopUp: LIMITS.assistant.dailyLimitBeforeTopUp, max: MAX_DAILY_LIMIT });

/** Whether `value` is a daily limit the settings accept: a whole number of credits from 0 to 100,000. */
export const isDailyLimit = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= DAILY_LIMITS.max;

/** The assistants of every account, kept in the service's data file. */
export class AssistantConnections {
  readonly #table: Table<AssistantRow>;
  readonly #store: ServiceStore<ConnectionTables>;
  readonly #now: () => number;
  // Rows by grant, by client and by account, so a request's lookup reads its own rows, not every connection
  // ever made. They are indexes of the table, which keeps them in step (an account's deletion, a rollback),
  // so nothing here checks a row on read or files one by hand.
  readonly #byGrant: TableIndex<AssistantRow, string>;
  readonly #byClient: TableIndex<AssistantRow, string>;
  readonly #byAccount: TableIndex<AssistantRow, number>;

  constructor(store: ServiceStore<ConnectionTables>, now: () => number) {
    this.#store = store;
    this.#table = store.table('assistant');
    this.#now = now;
    this.#byGrant = this.#table.index('grantId', (row) => row.grantId);
    this.#byClient = this.#table.index('clientId', (row) => row.clientId);
    this.#byAccount = this.#table.index('accountId', (row) => row.accountId);
  }

  #put(row: AssistantRow): AssistantRow {
    return this.#table.put(row);
  }

  get(id: string): AssistantRow | undefined {
    return this.#table.get(id);
  }

  /** The connection of an API key used on `/mcp`, made on its first use. */
  forKey(key: ApiKey): AssistantRow {
    const id = `asst_${key.id}`;
    return (
      this.#table.get(id) ??
      this.#put({
        id, accountId: key.accountId, kind: 'api_key', keyId: key.id, grantId: null, clientId: null,
        name: `API key ${key.token.slice(0, 6)}…${key.token.slice(-4)}`, dailyLimit: null, createdAt: this.#now(), disconnectedAt: null,
      })
    );
  }

  /** The live connection of an OAuth grant. */
  forGrant(grantId: string): AssistantRow | undefined {
    return this.#byGrant.get(grantId).find((row) => row.disconnectedAt === null);
  }

  /** Whether an OAuth client has a live connection: on any account, or on `accountId`'s. */
  hasLive(clientId: string, accountId?: number): boolean {
    return this.#byClient.get(clientId).some((row) => row.disconnectedAt === null && (accountId === undefined || row.accountId === accountId));
  }

  /** Records an assistant the account holder approved (the authorization page). */
  async connect(account: Account, { grantId, clientId, name, dailyLimit }: { grantId: string; clientId: string; name: string; dailyLimit: number | null }): Promise<AssistantRow> {
    const existing = this.forGrant(grantId);
    const row = this.#put({
      ...(existing ?? { id: `asst_${randomBytes(9).toString('base64url')}`, createdAt: this.#now(), disconnectedAt: null }),
      accountId: account.id, kind: 'oauth', keyId: null, grantId, clientId, name, dailyLimit,
    });
    await this.#store.commit();
    return row;
  }

  /** The account's connections, live ones first, newest first. */
  of(accountId: number): AssistantRow[] {
    return this.#byAccount.get(accountId)
      .sort((a, b) => Number(a.disconnectedAt !== null) - Number(b.disconnectedAt !== null) || b.createdAt - a.createdAt);
  }

  /** The limit in force: the one the account holder set, or the default for the account. */
  dailyLimit(row: AssistantRow, account: Account): number {
    return row.dailyLimit ?? (account.toppedUp ? DAILY_LIMITS.default : DAILY_LIMITS.beforeTopUp);
  }

  async setDailyLimit(row: AssistantRow, limit: number | null): Promise<AssistantRow> {
    const changed = this.#put({ ...row, dailyLimit: limit });
    await this.#store.commit();
    return changed;
  }

  /** Ends the connection: its requests on `/mcp` are refused from now on (the caller revokes its tokens). */
  async disconnect(row: AssistantRow): Promise<AssistantRow> {
    const changed = this.#put({ ...row, disconnectedAt: this.#now() });
    await this.#store.commit();
    return changed;
  }
}
