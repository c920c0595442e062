import type { IndexKey, IndexKeys, Row, ServiceStore, Table, TableIndex } from './store.js';

/** A row that names its account (clips, assets, image jobs, upload links, keys, assistants). */
type Owned = Row & { accountId?: unknown; assistant?: unknown; payload?: { accountId?: unknown } };

/** An account id written as text (an `Idempotency-Key` record's scope, an OAuth record's `accountId`), as a number. */
const ACCOUNT_TEXT = /^[1-9]\d{0,15}$/;

/** Tables this leaves alone: the account's own row and keys are `Accounts.remove`'s; `meta` is the service's. */
const NOT_OWNED: ReadonlySet<string> = new Set(['account', 'key', 'meta']);

/** What each table's rows are filed under: the account they belong to, or (`assistant_spend`) their assistant. */
function ownerOf(table: string): (row: Owned) => IndexKeys<IndexKey> {
  switch (table) {
    // An `Idempotency-Key` record is `<account>:<key>`; the assistant's own records (`assistant:<hash>`) name none.
    case 'idempotency':
      return (row) => {
        const scope = typeof row.id === 'string' ? row.id.slice(0, row.id.indexOf(':')) : '';
        return ACCOUNT_TEXT.test(scope) ? Number(scope) : undefined;
      };
    // The sign-in's records (grants, tokens, sessions) name their account as a string.
    case 'oauth':
      return (row) => {
        const account = row.payload?.accountId;
        return typeof account === 'string' && ACCOUNT_TEXT.test(account) ? Number(account) : undefined;
      };
    // A charge names its assistant: an account's charges are those of its assistants.
    case 'assistant_spend':
      return (row) => (typeof row.assistant === 'string' ? row.assistant : undefined);
    default:
      return (row) => (typeof row.accountId === 'number' ? row.accountId : undefined);
  }
}

/**
 * What each account owns, in every table that holds rows of an account: an index per table (`owner`), kept
 * in step by the table, so deleting an account reads that account's rows and no other's.
 * @example
 * const owned = new OwnedRows(store, ['video', 'asset', 'idempotency', 'assistant', 'assistant_spend']);
 * owned.of('asset', 7) // account 7's assets
 * owned.remove(7) // { video: 3, asset: 1, idempotency: 2 }
 */
export class OwnedRows<T extends { [K in keyof T]: Row }> {
  readonly #owners = new Map<string, { table: Table<Owned>; index: TableIndex<Owned, IndexKey> }>();

  /** Files the rows of `tables` by owner, from the rows there are now. */
  constructor(store: ServiceStore<T>, tables: readonly (keyof T & string)[]) {
    for (const name of tables) {
      if (NOT_OWNED.has(name)) continue;
      const table = store.table(name) as unknown as Table<Owned>;
      this.#owners.set(name, { table, index: table.index('owner', ownerOf(name)) });
    }
  }

  /** The rows of `table` that belong to `accountId`, in filing order (none for a table this does not follow). */
  of<K extends keyof T & string>(table: K, accountId: number): T[K][] {
    return (this.#owners.get(table)?.index.get(accountId) ?? []) as unknown as T[K][];
  }

  /**
   * Removes every row an account being deleted owns: the rows that name it (`accountId`), its
   * `Idempotency-Key` records, its OAuth grants, tokens and sessions, and the charges of its assistants.
   * The rows go through the store, so a removal inside a unit of work is taken back with it. Answers how
   * many rows went, by table.
   */
  remove(accountId: number): Record<string, number> {
    // Its assistants' ids first: their charges are filed under them.
    const assistants = this.#owners.get('assistant')?.index.get(accountId).map((row) => row.id) ?? [];
    const removed: Record<string, number> = {};
    for (const [name, { table, index }] of this.#owners) {
      const gone = name === 'assistant_spend' ? assistants.flatMap((id) => index.get(id)) : index.get(accountId);
      for (const row of gone) table.remove(row.id);
      if (gone.length > 0) removed[name] = gone.length;
    }
    return removed;
  }
}
