import { FileLock } from '../store/file-lock.js';
import { JournalFile } from '../store/journal-file.js';

/** A record the service keeps: any JSON object with an id. */
export interface Row {
  readonly id: number | string;
}

/** One change, as the journal keeps it: `[table, id, record]`, or `[table, id, null]` for a removal. */
type JournalLine = [table: string, id: number | string, row: Row | null];

interface StateFile {
  version: 1;
  /** The next integer id per table: ids are never reused, also after a removal or a crash. */
  seq: Record<string, number>;
  tables: Record<string, Row[]>;
}

export interface ServiceStoreOptions<T extends { [K in keyof T]: Row }> {
  /** The data file (a lowdb snapshot plus `<file>.journal`), or `false` to keep everything in memory. */
  file: string | false;
  /** The tables the store holds; a file's other tables are refused. */
  tables: ReadonlyArray<keyof T & string>;
  /** Journal lines between snapshots, at least. @default 10_000 */
  compactAfter?: number;
}

/** One table: its rows in memory, each change journalled by `put` and `remove`. */
export class Table<R extends Row> {
  readonly name: string;
  readonly #rows = new Map<R['id'], R>();
  readonly #owner: ServiceStore<Record<string, Row>>;

  /** @internal */
  constructor(name: string, owner: ServiceStore<Record<string, Row>>) {
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

/**
 * The service's records (accounts, keys, clips, idempotency records…) on the embedded store: every table
 * in memory, each change appended to a journal with group commit (`store/journal-file`), a fresh snapshot
 * once the journal has grown as long as the data, and the file locked to one process. A change is
 * durable once `commit()` resolves: routes await it before answering, so a 202 survives a crash.
 * @example
 * const store = await ServiceStore.open<{ video: Video }>({ file: '.cliphook/service.json', tables: ['video'] });
 * store.table('video').put({ id: store.nextId('video'), status: 'pending' });
 * await store.commit();
 */
export class ServiceStore<T extends { [K in keyof T]: Row }> {
  readonly file: string | false;
  readonly #tables = new Map<string, Table<Row>>();
  readonly #seq: Record<string, number> = {};
  readonly #journal: JournalFile<StateFile, JournalLine> | null;
  readonly #lock: FileLock | null;
  #badLines = 0;

  private constructor({ file, tables, compactAfter }: ServiceStoreOptions<T>) {
    this.file = file;
    for (const name of tables) this.#tables.set(name, new Table(name, this as unknown as ServiceStore<Record<string, Row>>));
    this.#journal =
      file === false
        ? null
        : new JournalFile<StateFile, JournalLine>({
            file,
            ...(compactAfter === undefined ? {} : { compactAfter }),
            snapshot: () => this.#snapshot(),
            sizeOf: (state) => Object.values(state.tables ?? {}).reduce((sum, rows) => sum + rows.length, 0),
            onBadLine: () => void this.#badLines++,
          });
    this.#lock = file === false ? null : FileLock.acquire(file, 'cliphook serve');
  }

  /** Opens (and, with a file, loads) a store. A second process on the same file gets a `FileLockedError`. */
  static async open<T extends { [K in keyof T]: Row }>(options: ServiceStoreOptions<T>): Promise<ServiceStore<T>> {
    const { file, tables } = options;
    if (file !== false && (typeof file !== 'string' || file === '')) throw new TypeError(`Expected \`file\` to be a path or false, got ${JSON.stringify(file)}.`);
    if (!Array.isArray(tables) || tables.length === 0) throw new TypeError('Expected `tables` to name at least one table.');
    const store = new ServiceStore<T>(options);
    try {
      await store.#load();
    } catch (error) {
      store.#lock?.release();
      throw error;
    }
    return store;
  }

  table<K extends keyof T & string>(name: K): Table<T[K]> {
    const table = this.#tables.get(name);
    if (!table) throw new TypeError(`No table ${name} in this store.`);
    return table as unknown as Table<T[K]>;
  }

  /** The next integer id of `table`, from 1, never handed out twice. */
  nextId(table: keyof T & string): number {
    const id = this.#seq[table] ?? 1;
    this.#seq[table] = id + 1;
    return id;
  }

  /** Lines of the journal that could not be read at load (a torn last line after a crash). */
  get badLines(): number {
    return this.#badLines;
  }

  /** Resolves once every change made before the call is on disk (at once without a file). */
  commit(): Promise<void> {
    return this.#journal ? this.#journal.commit() : Promise.resolve();
  }

  /** Writes a fresh snapshot and releases the file. */
  async close(): Promise<void> {
    try {
      await this.#journal?.close();
    } finally {
      this.#lock?.release();
    }
  }

  /** @internal Called by tables. */
  journal(table: string, id: number | string, row: Row | null): void {
    if (typeof id === 'number' && id >= (this.#seq[table] ?? 1)) this.#seq[table] = id + 1;
    this.#journal?.append([table, id, row]);
  }

  async #load(): Promise<void> {
    if (!this.#journal) return;
    const { snapshot, entries } = await this.#journal.read();
    if (snapshot !== null) {
      if (snapshot.version !== 1 || typeof snapshot.tables !== 'object' || snapshot.tables === null) {
        throw new Error(`${this.file} is not a cliphook service data file.`);
      }
      Object.assign(this.#seq, snapshot.seq);
      for (const [name, rows] of Object.entries(snapshot.tables)) {
        const table = this.#tables.get(name);
        if (!table) throw new Error(`${this.file} has a table ${name} this version does not know.`);
        for (const row of rows) this.#loadRow(table, row.id, row);
      }
    }
    // Replaying is idempotent (each line is the whole record), as a crash mid-compaction leaves both.
    for (const [name, id, row] of entries) {
      const table = this.#tables.get(name);
      if (table) this.#loadRow(table, id, row);
    }
  }

  #loadRow(table: Table<Row>, id: number | string, row: Row | null): void {
    table.load(row, id);
    if (typeof id === 'number' && id >= (this.#seq[table.name] ?? 1)) this.#seq[table.name] = id + 1;
  }

  #snapshot(): StateFile {
    const tables: Record<string, Row[]> = {};
    for (const [name, table] of this.#tables) tables[name] = [...table.values()];
    return { version: 1, seq: { ...this.#seq }, tables };
  }
}
