/** A record the service keeps: any JSON object with an id. */
export interface Row {
  readonly id: number | string;
}

/** Where a table journals its changes: the service store (`state.ts`). */
export interface TableOwner {
  journal(table: string, id: number | string, row: Row | null): void;
}

/** One table: its rows in memory, each change journalled by `put` and `remove`. */
export class Table<R extends Row> {
  readonly name: string;
  readonly #rows = new Map<R['id'], R>();
  readonly #owner: TableOwner;

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

  /** Stores `row` (new or changed in place) and queues it for the next commit. */
  put(row: R): R {
    this.#rows.set(row.id, row);
    this.#owner.journal(this.name, row.id, row);
    return row;
  }

  remove(id: R['id']): boolean {
    const had = this.#rows.delete(id);
    if (had) this.#owner.journal(this.name, id, null);
    return had;
  }

  /** @internal Loading: no journal line. */
  load(row: R | null, id: R['id']): void {
    if (row === null) this.#rows.delete(id);
    else this.#rows.set(id, row);
  }
}
