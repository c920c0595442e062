/** A record the service keeps: any JSON object with an id. */
export interface Row {
  readonly id: number | string;
}

/** Where a table journals its changes: the service store (`store.ts`). */
export interface TableOwner {
  journal(table: string, id: number | string, row: Row | null): void;
}

/** What an index files rows under: a string or a number (compared with `===`, as a `Map` key). */
export type IndexKey = string | number;

/** What a row is filed under: one key, several (duplicates count once), or none (`undefined`, `null`, `[]`). */
export type IndexKeys<K extends IndexKey> = K | readonly (K | null | undefined)[] | null | undefined;

export interface TableIndexOptions {
  /**
   * One row per key: a `put` that would file a row under a key another row holds throws a `TypeError`
   * (naming the table, the index and the row holding it, never the key, which may be a secret) before
   * anything changes. A file's rows are loaded as they are: should two share a key, `first` is the earlier.
   * @default false
   */
  unique?: boolean;
}

/**
 * A function kept in a field, compared as a method's parameters are (bivariantly): without it a table of
 * `Video` rows would not be a table of `Row`s, and a store of more tables not a store of fewer.
 */
type Bivariant<A extends unknown[], T> = { bivariant(...args: A): T }['bivariant'];

/** Keys as an index keeps them: none, one (no array made), or two or more distinct. */
type Filed<K> = K | readonly K[] | undefined;

/**
 * Rows of one table by a key computed from each row: the table keeps it in step on every
 * `put`, `remove` and `load` (a unit of work's rollback and a data file's load included), so its owner
 * never rebuilds or undoes it. Rows are changed in place and then put again, so the keys a row is filed
 * under are the ones `keysOf` gave at its last put, not the ones its object would give now.
 *
 * Lookups answer in filing order: the order in which rows were first filed under the key (oldest first
 * for rows made in id order); a row keeps its place while it keeps the key, and goes last when it gets
 * it again. A put costs O(keys of the row), a lookup O(rows under the key): neither reads other rows.
 * @example
 * const byAccount = clips.index('accountId', (clip) => clip.accountId);
 * byAccount.get(7) // account 7's clips, oldest first
 */
export class TableIndex<R extends Row, K extends IndexKey> {
  readonly name: string;
  readonly unique: boolean;
  readonly #table: string;
  readonly #keysOf: Bivariant<[row: R], IndexKeys<K>>;
  readonly #byKey = new Map<K, Map<R['id'], R>>();
  /** Each row's keys as of its last put (or load): what a change or removal takes it out from. */
  readonly #filed = new Map<R['id'], Filed<K>>();
  #dropped = false;

  /** @internal Made by `Table.index`. */
  constructor(table: string, name: string, keysOf: (row: R) => IndexKeys<K>, unique: boolean) {
    this.#table = table;
    this.name = name;
    this.#keysOf = keysOf;
    this.unique = unique;
  }

  // The steps a put and a lookup take are written out here rather than in small helpers,
  // so one request runs a handful of this module's functions, not a dozen.

  /** The rows filed under `key`, in filing order (a new array). */
  get(key: K): R[] {
    if (this.#dropped) throw replaced(this.#table, this.name);
    const rows = this.#byKey.get(key);
    return rows ? [...rows.values()] : [];
  }

  /** The first row filed under `key`: for a unique index, the one row. */
  first(key: K): R | undefined {
    if (this.#dropped) throw replaced(this.#table, this.name);
    const rows = this.#byKey.get(key);
    return rows ? rows.values().next().value : undefined;
  }

  has(key: K): boolean {
    if (this.#dropped) throw replaced(this.#table, this.name);
    return this.#byKey.has(key);
  }

  /** How many rows are filed under `key`. */
  count(key: K): number {
    if (this.#dropped) throw replaced(this.#table, this.name);
    return this.#byKey.get(key)?.size ?? 0;
  }

  /**
   * @internal The keys `row` is to be filed under, checked: a key that is not a string or a number, or (with
   * `check`, a unique index's) one another row holds, throws here, before the table changes anything.
   */
  plan(row: R, check = this.unique): Filed<K> {
    const given = this.#keysOf(row);
    let keys: Filed<K>;
    if (given === null || given === undefined) keys = undefined;
    else if (!Array.isArray(given)) {
      if (typeof given !== 'string' && (typeof given !== 'number' || Number.isNaN(given))) throw badKey(this.#table, this.name, given);
      keys = given as K;
    } else {
      const distinct: K[] = [];
      // A long list is deduped through a set, so a put stays linear in the row's keys.
      const seen = (given as readonly unknown[]).length > SMALL ? new Set<unknown>() : null;
      for (const key of given as readonly unknown[]) {
        if (key === null || key === undefined) continue;
        if (typeof key !== 'string' && (typeof key !== 'number' || Number.isNaN(key))) throw badKey(this.#table, this.name, key);
        if (seen ? seen.has(key) : distinct.includes(key as K)) continue;
        seen?.add(key);
        distinct.push(key as K);
      }
      keys = distinct.length === 0 ? undefined : distinct.length === 1 ? distinct[0] : distinct;
    }
    if (check && keys !== undefined) {
      for (const key of Array.isArray(keys) ? (keys as readonly K[]) : [keys as K]) {
        const holders = this.#byKey.get(key);
        // Only taking a key is refused: a row keeps one it holds with another (a rollback's restore), so it can still be changed.
        if (holders === undefined || holders.has(row.id)) continue;
        const [holder] = holders.keys();
        throw new TypeError(`Table ${this.#table}, unique index ${this.name}: row ${JSON.stringify(row.id)} would take a key row ${JSON.stringify(holder)} holds.`);
      }
    }
    return keys;
  }

  /** @internal Files `row` under `next` (its planned keys), out of the keys it no longer has. */
  file(row: R, next: Filed<K>): void {
    const id = row.id;
    const before = this.#filed.get(id);
    const list = Array.isArray(next) ? (next as readonly K[]) : null;
    if (before !== undefined && before !== next) {
      const kept = list && list.length > SMALL ? new Set<K>(list) : list;
      const keeps = (key: K) => (kept instanceof Set ? kept.has(key) : kept ? kept.includes(key) : key === next);
      if (Array.isArray(before)) {
        for (const key of before as readonly K[]) if (!keeps(key)) this.#out(key, id);
      } else if (!keeps(before as K)) this.#out(before as K, id);
    }
    // A key kept stays in its place (`Map.set` on a present key); a new one goes last.
    if (list) {
      for (const key of list) {
        let rows = this.#byKey.get(key);
        if (!rows) this.#byKey.set(key, (rows = new Map()));
        rows.set(id, row);
      }
    } else if (next !== undefined) {
      let rows = this.#byKey.get(next as K);
      if (!rows) this.#byKey.set(next as K, (rows = new Map()));
      rows.set(id, row);
    }
    if (next === undefined) this.#filed.delete(id);
    else this.#filed.set(id, next);
  }

  /** @internal Takes the row `id` out of every key it was filed under. */
  unfile(id: R['id']): void {
    const before = this.#filed.get(id);
    if (before === undefined) return;
    if (Array.isArray(before)) for (const key of before as readonly K[]) this.#out(key, id);
    else this.#out(before as K, id);
    this.#filed.delete(id);
  }

  /** @internal Replaced by an index of the same name: its lookups would no longer follow the rows. */
  drop(): void {
    this.#dropped = true;
    this.#byKey.clear();
    this.#filed.clear();
  }

  #out(key: K, id: R['id']): void {
    const rows = this.#byKey.get(key);
    if (!rows) return;
    rows.delete(id);
    if (rows.size === 0) this.#byKey.delete(key);
  }
}

/** Keys past this many are compared through a set rather than a list. */
const SMALL = 16;

const badKey = (table: string, index: string, key: unknown) => new TypeError(`Table ${table}, index ${index}: a key must be a string or a number, got ${typeof key}.`);
const replaced = (table: string, index: string) => new Error(`Table ${table}, index ${index}: replaced by a later index of the same name.`);

/** One table: its rows in memory, each change journalled by `put` and `remove`, its indexes kept in step. */
export class Table<R extends Row> {
  readonly name: string;
  readonly #rows = new Map<R['id'], R>();
  readonly #owner: TableOwner;
  readonly #indexes = new Map<string, TableIndex<R, IndexKey>>();
  /** `#indexes` as a list, and each one's planned keys for the put under way (one array kept, none made per put). */
  #list: TableIndex<R, IndexKey>[] = [];
  readonly #planned: Array<Filed<IndexKey>> = [];
  readonly #watchers = new Map<string, Bivariant<[id: R['id'], row: R | null], void>>();

  /** @internal */
  constructor(name: string, owner: TableOwner) {
    this.name = name;
    this.#owner = owner;
  }

  get size(): number {
    return this.#rows.size;
  }

  get(id: R['id']): R | undefined {
    return this.#rows.get(id);
  }

  values(): IterableIterator<R> {
    return this.#rows.values();
  }

  /**
   * An index of this table's rows by `keysOf(row)`, a pure function of the row, asked for once at set-up:
   * filed from the rows there are now, then kept in step by the table. Asking again for a `name` replaces
   * the earlier index (an owner made again over the same store), whose lookups then throw.
   * @example
   * const byToken = keys.index('token', (key) => (key.revokedAt === null ? key.token : undefined), { unique: true });
   * const byImage = jobs.index('fileToken', (job) => job.images.flatMap((image) => [image.token, image.thumbToken]));
   */
  index<K extends IndexKey>(name: string, keysOf: (row: R) => IndexKeys<K>, { unique = false }: TableIndexOptions = {}): TableIndex<R, K> {
    if (typeof name !== 'string' || name === '') throw new TypeError(`Expected \`name\` to be a non-empty string, got ${JSON.stringify(name)}.`);
    if (typeof keysOf !== 'function') throw new TypeError('Expected `keysOf` to be a function of a row.');
    if (typeof unique !== 'boolean') throw new TypeError(`Expected \`unique\` to be a boolean, got ${JSON.stringify(unique)}.`);
    const index = new TableIndex<R, K>(this.name, name, keysOf, unique);
    for (const row of this.#rows.values()) index.file(row, index.plan(row, false));
    this.#indexes.get(name)?.drop();
    this.#indexes.set(name, index as unknown as TableIndex<R, IndexKey>);
    this.#list = [...this.#indexes.values()];
    return index;
  }

  /**
   * Calls `listener(id, row)` after each put or load of a row and `listener(id, null)` after its removal,
   * rollbacks included: for what follows the rows outside the store (the request journal's secrets to
   * redact). Asking again for a `name` replaces the earlier listener.
   */
  watch(name: string, listener: (id: R['id'], row: R | null) => void): void {
    if (typeof listener !== 'function') throw new TypeError('Expected `listener` to be a function.');
    this.#watchers.set(name, listener);
  }

  /** Stores `row` (new or changed in place), files it in every index, and queues it for the next commit. */
  put(row: R): R {
    return this.#put(row, true);
  }

  /**
   * @internal A rollback's put (rollback.ts): as `put`, but a unique index does not refuse it. The row takes
   * back the keys it held before the unit; one another row took meanwhile is then held by both (`first`
   * answers the row that took it meanwhile, filed first), rather than the rollback stopping halfway.
   */
  restore(row: R): R {
    return this.#put(row, false);
  }

  #put(row: R, checkUnique: boolean): R {
    // Every index's keys first, so a bad key or a unique key already held refuses the put before anything changes.
    const list = this.#list;
    const planned = this.#planned;
    for (let i = 0; i < list.length; i++) planned[i] = checkUnique ? list[i]!.plan(row) : list[i]!.plan(row, false);
    this.#rows.set(row.id, row);
    for (let i = 0; i < list.length; i++) {
      list[i]!.file(row, planned[i] as Filed<IndexKey>);
      planned[i] = undefined;
    }
    this.#owner.journal(this.name, row.id, row);
    for (const listener of this.#watchers.values()) listener(row.id, row);
    return row;
  }

  remove(id: R['id']): boolean {
    const had = this.#rows.delete(id);
    if (!had) return false;
    for (const index of this.#list) index.unfile(id);
    this.#owner.journal(this.name, id, null);
    for (const listener of this.#watchers.values()) listener(id, null);
    return true;
  }

  /** @internal Loading: no journal line, no unique check (a file's rows are what they are). */
  load(row: R | null, id: R['id']): void {
    if (row === null) {
      if (!this.#rows.delete(id)) return;
      for (const index of this.#list) index.unfile(id);
      for (const listener of this.#watchers.values()) listener(id, null);
      return;
    }
    this.#rows.set(id, row);
    for (const index of this.#list) index.file(row, index.plan(row, false));
    for (const listener of this.#watchers.values()) listener(id, row);
  }
}
