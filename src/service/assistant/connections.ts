import { randomBytes } from 'node:crypto';
import { LIMITS } from '../contract/limits.js';
import { MAX_DAILY_LIMIT } from '../contract/settings.js';
import type { Account, ApiKey } from '../core/accounts.js';
import type { ServiceStore, Table } from '../core/store.js';

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
  // Issue 29 follow-up: row ids by grant, by client and by account, so a request's lookup reads its own rows,
  // not every connection ever made. Rows are checked on read (a row removed beside this class, by an account's
  // deletion or a rollback, answers nothing; one put back by a rollback is found again), so nothing is pruned.
  readonly #byGrant = new Map<string, Set<string>>();
  readonly #byClient = new Map<string, Set<string>>();
  readonly #byAccount = new Map<number, Set<string>>();

  constructor(store: ServiceStore<ConnectionTables>, now: () => number) {
    this.#store = store;
    this.#table = store.table('assistant');
    this.#now = now;
    for (const row of this.#table.values()) this.#file(row);
  }

  #put(row: AssistantRow): AssistantRow {
    this.#file(row);
    return this.#table.put(row);
  }

  #file(row: AssistantRow): void {
    const add = <K>(map: Map<K, Set<string>>, key: K) => {
      let ids = map.get(key);
      if (!ids) map.set(key, (ids = new Set()));
      ids.add(row.id);
    };
    add(this.#byAccount, row.accountId);
    if (row.grantId !== null) add(this.#byGrant, row.grantId);
    if (row.clientId !== null) add(this.#byClient, row.clientId);
  }

  /** The rows filed under `key` that still are so (see the indexes above). */
  #rows<K>(map: Map<K, Set<string>>, key: K, belongs: (row: AssistantRow) => boolean): AssistantRow[] {
    const rows: AssistantRow[] = [];
    for (const id of map.get(key) ?? []) {
      const row = this.#table.get(id);
      if (row && belongs(row)) rows.push(row);
    }
    return rows;
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
    return this.#rows(this.#byGrant, grantId, (row) => row.grantId === grantId && row.disconnectedAt === null)[0];
  }

  /** Whether an OAuth client has a live connection: on any account, or on `accountId`'s. */
  hasLive(clientId: string, accountId?: number): boolean {
    return this.#rows(this.#byClient, clientId, (row) => row.clientId === clientId && row.disconnectedAt === null && (accountId === undefined || row.accountId === accountId)).length > 0;
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
    return this.#rows(this.#byAccount, accountId, (row) => row.accountId === accountId)
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
