import { FileLock } from '../../store/file-lock.js';
import { JournalFile } from '../../store/journal-file.js';
import { ContextSlot } from './context.js';
import { undoChanges, type Unit } from './rollback.js';
import { Table, type Row } from './table.js';

export { Table, TableIndex, type IndexKey, type IndexKeys, type Row, type TableIndexOptions } from './table.js';

/** One change, as the journal keeps it: `[table, id, record]`, or `[table, id, null]` for a removal. */
type JournalLine = [table: string, id: number | string, row: Row | null];

interface StateFile {
  version: 1;
  /** The next integer id per table: ids are never reused, also after a removal or a crash. */
  seq: Record<string, number>;
  tables: Record<string, Row[]>;
}

/** The timers a store retries a failed write on: the service passes its clock. */
export interface RetryTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface ServiceStoreOptions<T extends { [K in keyof T]: Row }> {
  /** The data file (a lowdb snapshot plus `<file>.journal`), or `false` to keep everything in memory. */
  file: string | false;
  /** The tables the store holds; a file's other tables are refused. */
  tables: ReadonlyArray<keyof T & string>;
  /** Journal lines between snapshots, at least. @default 10_000 */
  compactAfter?: number;
  /** Where a failed write is retried from (after 1 s, doubling to 30 s) until one succeeds. @default the global timers, unref'd */
  retry?: RetryTimers;
}

/** A write of the data file failed (a read-only or full disk): what was asked is not saved. */
export class StoreWriteError extends Error {
  constructor(cause: unknown) {
    super(`cannot write the data file: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StoreWriteError';
  }
}

const GLOBAL_TIMERS: RetryTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
const FIRST_RETRY_MS = 1_000;
const LAST_RETRY_MS = 30_000;


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
  readonly #journal: JournalFile<StateFile | PutRows, JournalLine> | null;
  readonly #lock: FileLock | null;
  #badLines = 0;
  /** The command whose changes are being recorded (`unit()`), through its awaits. */
  readonly #units = new ContextSlot<Unit>();
  /** Each row's JSON as last put (or loaded): what a command's change is undone to. */
  readonly #shadows = new Map<string, Map<number | string, string>>();
  /** Journal lines appended, and how many of them are known to be on disk. */
  #appended = 0;
  #durable = 0;
  readonly #retry: RetryTimers;
  #retryTimer: unknown = null;
  #retryDelay = FIRST_RETRY_MS;
  #failing = false;
  readonly #rolledBack = new Set<() => void>();
  readonly #writable = new Set<() => void>();
  #closing = false;

  private constructor({ file, tables, compactAfter, retry = GLOBAL_TIMERS }: ServiceStoreOptions<T>) {
    this.file = file;
    this.#retry = retry;
    for (const name of tables) this.#tables.set(name, new Table(name, this));
    this.#journal =
      file === false
        ? null
        : new JournalFile<StateFile | PutRows, JournalLine>({
            file,
            ...(compactAfter === undefined ? {} : { compactAfter }),
            snapshot: () => this.#snapshot(),
            // A compaction joins each row's JSON as last put instead of serialising every row again.
            stringify: (state) => (state instanceof PutRows ? state.text() : JSON.stringify(state)),
            sizeOf: (state) => (state instanceof PutRows ? state.rows : Object.values(state.tables ?? {}).reduce((sum, rows) => sum + rows.length, 0)),
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

  /** The last id `nextId` gave for `table` (0 before the first): the newest row's, unless it was removed. */
  lastId(table: keyof T & string): number {
    return (this.#seq[table] ?? 1) - 1;
  }

  /** Starts a table's ids again from 1 (`POST /test_helpers/reset`, once the table is empty). */
  restartIds(table: keyof T & string): void {
    delete this.#seq[table];
  }

  /** Lines of the journal that could not be read at load (a torn last line after a crash). */
  get badLines(): number {
    return this.#badLines;
  }

  /**
   * Resolves once every change made before the call is on disk (at once without a file). Rejects with a
   * `StoreWriteError` when the write fails: the changes stay in memory and queued, and the write is retried
   * by itself until it succeeds; a command (`unit()`) whose changes were not written is taken back.
   */
  async commit(): Promise<void> {
    if (!this.#journal) return;
    const upTo = this.#appended;
    const unit = this.#open();
    try {
      await this.#journal.commit();
    } catch (error) {
      if (unit && unit.lastSeq > this.#durable) unit.failed = true;
      this.#failing = true;
      this.#retryLater();
      throw new StoreWriteError(error);
    }
    if (upTo > this.#durable) this.#durable = upTo;
    if (this.#failing) {
      this.#failing = false;
      this.#retryDelay = FIRST_RETRY_MS;
      if (this.#retryTimer !== null) this.#retry.clearTimeout(this.#retryTimer);
      this.#retryTimer = null;
      for (const listener of this.#writable) listener();
    }
  }

  /** Writes to the data file now even with no change queued (a blank journal line): rejects as `commit()` when it cannot. */
  async probe(): Promise<void> {
    this.#journal?.appendText('');
    await this.commit();
  }

  /**
   * Runs one command (an HTTP request's handler, a task's creation) so that it is saved whole or leaves no
   * trace: every row it puts or removes, through its awaits, is recorded; when one of its
   * writes fails (or the write of what it left unsaved, made here at its end), or it throws, each of its
   * changes is undone, newest first, onto the rows as they are now, and the error is thrown on (a failed
   * write as a `StoreWriteError`): the caller answers 503, and nothing changed, in memory or on disk.
   * Each table's indexes follow the rows undone; timers kept beside the rows are re-armed
   * or dropped by the `onRollback` listeners. A unit inside
   * another records its own changes and is taken back on its own.
   */
  async unit<R>(fn: () => R | Promise<R>): Promise<R> {
    const unit: Unit = { open: true, failed: false, changes: [], lastSeq: 0 };
    let result: R | undefined;
    let thrown: { error: unknown } | null = null;
    try {
      result = await this.#units.run(unit, fn);
    } catch (error) {
      thrown = { error };
    }
    unit.open = false;
    if (!thrown && !unit.failed && unit.lastSeq > this.#durable) await this.commit().catch(() => void (unit.failed = true));
    if (thrown || unit.failed) {
      this.#rollback(unit);
      if (thrown) throw thrown.error;
      throw new StoreWriteError(new Error('a write of this change failed'));
    }
    return result as R;
  }

  /** Runs `fn` as no command's change: what it puts is never taken back with a command (a clock advance's record). */
  background<R>(fn: () => R): R {
    return this.#units.run(undefined, fn);
  }

  /** Calls `listener` after a command's changes were taken back, so owners re-arm or drop their timers (the tables' indexes follow by themselves). */
  onRollback(listener: () => void): () => void {
    this.#rolledBack.add(listener);
    return () => void this.#rolledBack.delete(listener);
  }

  /** Calls `listener` when a write succeeds after one failed: work that waited for the disk can go on. */
  onWritable(listener: () => void): () => void {
    this.#writable.add(listener);
    return () => void this.#writable.delete(listener);
  }

  /** Writes a fresh snapshot and releases the file. */
  async close(): Promise<void> {
    if (this.#retryTimer !== null) this.#retry.clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
    // The last snapshot serialises the rows as they are: what changed in place and was never put (a
    // request counter) is kept at a clean close, as it always was.
    this.#closing = true;
    try {
      // Even right after a compaction: the rows as they are may differ from the rows as last put.
      await this.#journal?.close({ compact: true });
    } finally {
      this.#lock?.release();
    }
  }

  /** @internal Called by tables. */
  journal(table: string, id: number | string, row: Row | null): void {
    if (typeof id === 'number' && id >= (this.#seq[table] ?? 1)) this.#seq[table] = id + 1;
    const after = row === null ? null : JSON.stringify(row);
    const shadows = this.#shadowsOf(table);
    const before = shadows.get(id) ?? null;
    if (after === null) shadows.delete(id);
    else shadows.set(id, after);
    const seq = ++this.#appended;
    if (this.#journal) this.#journal.appendText(`[${JSON.stringify(table)},${JSON.stringify(id)},${after ?? 'null'}]`);
    // In memory a change is as saved as it will ever be.
    else this.#durable = seq;
    const unit = this.#open();
    if (unit) {
      unit.changes.push({ table, id, before, after });
      unit.lastSeq = seq;
    }
  }

  #open(): Unit | undefined {
    const unit = this.#units.get();
    return unit?.open ? unit : undefined;
  }

  #shadowsOf(table: string): Map<number | string, string> {
    let shadows = this.#shadows.get(table);
    if (!shadows) this.#shadows.set(table, (shadows = new Map()));
    return shadows;
  }

  /** Undoes a unit's changes, newest first, as changes of no command; then tells the owners. */
  #rollback(unit: Unit): void {
    if (unit.changes.length === 0) return;
    try {
      this.background(() => undoChanges(unit.changes, (name) => this.#tables.get(name)!));
    } finally {
      // Timers follow the rows even if an undo threw (each owner re-arms from the rows as they are).
      for (const listener of this.#rolledBack) listener();
    }
  }

  /** Retries the write after 1 s, then 2, 4… up to 30 s, until one succeeds (queued changes reach the disk by themselves). */
  #retryLater(): void {
    if (this.#retryTimer !== null) return;
    const delay = this.#retryDelay;
    this.#retryDelay = Math.min(LAST_RETRY_MS, delay * 2);
    this.#retryTimer = this.#retry.setTimeout(() => {
      this.#retryTimer = null;
      this.commit().catch(() => undefined);
    }, delay);
  }

  async #load(): Promise<void> {
    if (!this.#journal) return;
    const { snapshot: read, entries } = await this.#journal.read();
    // What a file holds is parsed JSON: a `PutRows` is only ever written.
    const snapshot = read as StateFile | null;
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
    if (row === null) this.#shadowsOf(table.name).delete(id);
    else this.#shadowsOf(table.name).set(id, JSON.stringify(row));
    if (typeof id === 'number' && id >= (this.#seq[table.name] ?? 1)) this.#seq[table.name] = id + 1;
  }

  /**
   * The state a compaction writes. Mid-run it is each row's JSON as last put (its shadow, kept for
   * rollbacks anyway): exactly what the journal it replaces holds, with no row serialised again
   * (re-serialising every row costs as much as the puts themselves). At close, the rows as they are.
   */
  #snapshot(): StateFile | PutRows {
    if (!this.#closing) return new PutRows(this.#seq, [...this.#tables.keys()].map((name) => [name, this.#shadowsOf(name)]));
    const tables: Record<string, Row[]> = {};
    for (const [name, table] of this.#tables) tables[name] = [...table.values()];
    return { version: 1, seq: { ...this.#seq }, tables };
  }
}

/**
 * A snapshot made of the rows' JSON as last put (`StateFile` once parsed): the text is joined from the
 * strings the store keeps, in the tables' order and each table's row order (both maps keep a row's place
 * from its first put until its removal, as the table's own map does).
 */
class PutRows {
  readonly rows: number;
  readonly #seq: string;
  readonly #tables: ReadonlyArray<readonly [name: string, rows: ReadonlyMap<number | string, string>]>;

  constructor(seq: Record<string, number>, tables: ReadonlyArray<readonly [string, ReadonlyMap<number | string, string>]>) {
    // The sequence numbers as they are now; the rows are read when the write starts (`text()`), as a fresh snapshot would be.
    this.#seq = JSON.stringify(seq);
    this.#tables = tables;
    this.rows = tables.reduce((sum, [, rows]) => sum + rows.size, 0);
  }

  text(): string {
    const tables = this.#tables.map(([name, rows]) => `${JSON.stringify(name)}:[${[...rows.values()].join(',')}]`);
    return `{"version":1,"seq":${this.#seq},"tables":{${tables.join(',')}}}`;
  }
}
