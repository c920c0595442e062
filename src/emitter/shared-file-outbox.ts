import { randomUUID } from 'node:crypto';
import { FileLockedError, type LockHolder } from '../protocol/errors.js';
import { FileLock, realClock, type WaitClock } from '../store/file-lock.js';
import { GroupCommit } from '../store/group-commit.js';
import { readTextIfExists, replaceFile } from '../store/json-file.js';
import { DEFAULT_OUTBOX_FILE } from './file-outbox.js';
import type { Outbox } from './outbox.js';
import { CLOSE, OPEN, parseOutbox, repairTornFile, SEPARATOR, serialiseRecord, toRecord, utf8, type OutboxRows } from './outbox-format.js';
import type { DeliveryRecord } from './types.js';

export interface SharedFileOutboxOptions {
  /** The JSON file, in `FileOutbox`'s format. @default '.cliphook/outbox.json' */
  file?: string;
  /**
   * How long a read or write waits for another process's turn at the file (each holds it for one
   * read-and-write, milliseconds) before failing with `FileLockedError`.
   * @default 10_000
   */
  lockWaitMs?: number;
  /** The time that wait reads, and the name of a torn file kept aside. @default Node's own timers */
  clock?: WaitClock;
  /** Where the recovery of a torn file is reported. @default process.emitWarning */
  warn?: (message: string) => void;
}

/** The file as read: its rows, and its text, which a torn file is copied aside from. */
type FileRead = OutboxRows & { text: string };

/** Another live process sending a delivery: its lock's holder (`null` while its lock file is being written). */
export interface Sender {
  holder: LockHolder | null;
}

/**
 * An outbox file that several processes use at once (the CLI's `trigger` and `deliveries redeliver`).
 * Every write is a read, merge and atomic rename under `<file>.lock`, held for that moment only, and
 * changes only this process's deliveries, so none of another's vanish. A delivery waiting to be sent
 * belongs to one process (its line says `"owner"`, and `<file>.senders/<owner>.lock` is alive while that
 * process runs): `load()` takes the waiting deliveries whose owner is gone, never those of a live one,
 * so no delivery is sent by two processes. A file that is not valid JSON (torn) is copied aside and every
 * complete delivery in it is kept.
 * @example createEmitter({ store: new SharedFileOutbox({ file: '.cliphook/outbox.json' }), allowPrivateNetworks: true })
 */
export class SharedFileOutbox implements Outbox {
  readonly file: string;
  /** This instance's name in the file's `owner` fields: the pid, for people reading the file. */
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  readonly #lockWaitMs: number;
  readonly #clock: WaitClock;
  readonly #warn: (message: string) => void;
  /** Deliveries this process is sending. */
  readonly #mine = new Set<string>();
  /** Changes not yet written: the record to write, or `null` to remove it. */
  #changes = new Map<string, DeliveryRecord | null>();
  /** Waiting deliveries that a live process owns, as found by `load()`. */
  readonly #others = new Map<string, LockHolder | null>();
  readonly #group = new GroupCommit(() => this.#write());
  #sender: FileLock | null = null;

  constructor({ file = DEFAULT_OUTBOX_FILE, lockWaitMs = 10_000, clock = realClock, warn = defaultWarn }: SharedFileOutboxOptions = {}) {
    if (typeof file !== 'string' || file.length === 0) throw new TypeError(`Expected \`file\` to be a non-empty path, got ${JSON.stringify(file)}.`);
    if (!(Number.isFinite(lockWaitMs) && lockWaitMs >= 0)) throw new TypeError(`Expected \`lockWaitMs\` to be a non-negative number, got ${lockWaitMs}.`);
    this.file = file;
    this.#lockWaitMs = lockWaitMs;
    this.#clock = clock;
    this.#warn = warn;
  }

  /**
   * Takes the waiting deliveries nobody alive is sending (they are this process's from now on) and
   * returns them with the finished ones; those a live process is sending are left out (see `heldBy`).
   */
  async load(): Promise<DeliveryRecord[]> {
    // Alive from before the first claim, so no other process takes this one's deliveries for orphans.
    this.#sender ??= FileLock.acquire(senderPath(this.file, this.owner), 'cliphook sender');
    return this.#locked(async () => {
      const read = await this.#read();
      const records: DeliveryRecord[] = [];
      const alive = new Map<string, LockHolder | null | false>();
      for (const row of read.rows) {
        const record = toRecord(row)!;
        const owner = typeof row.owner === 'string' ? row.owner : null;
        if (record.state === 'pending' || record.state === 'delivering') {
          const holder = owner === null || owner === this.owner ? false : (alive.get(owner) ?? senderHolder(this.file, owner));
          if (owner !== null) alive.set(owner, holder);
          if (holder !== false) {
            this.#others.set(record.id, holder);
            continue;
          }
          this.#changes.set(record.id, record); // this process's once #merge has written it so
        }
        records.push(record);
      }
      const orphans = this.#forgetDeadOwners(read.rows, alive);
      if (read.torn || orphans || this.#changes.size > 0) await this.#writeOver(read);
      return records;
    });
  }

  /** The live process sending this delivery, as `load()` found it, or `undefined` when none is. */
  heldBy(id: string): Sender | undefined {
    return this.#others.has(id) ? { holder: this.#others.get(id) ?? null } : undefined;
  }

  /**
   * Makes a delivery this process's before it sends it again (a redelivery), unless another live process
   * took it meanwhile: then resolves with that holder, changing nothing.
   */
  async claim(id: string): Promise<Sender | undefined> {
    if (this.#mine.has(id)) return undefined; // taken by load(), and perhaps in flight already
    return this.#locked(async () => {
      const read = await this.#read();
      const row = read.rows.find((r) => r.id === id);
      const owner = typeof row?.owner === 'string' ? row.owner : null;
      if (row && owner !== null && owner !== this.owner) {
        const holder = senderHolder(this.file, owner);
        if (holder !== false) return { holder };
      }
      if (row) row.owner = this.owner;
      await this.#writeOver(read);
      this.#mine.add(id); // only once the file says so: a failed write claimed nothing
      return undefined;
    });
  }

  async save(record: DeliveryRecord): Promise<void> {
    this.#changes.set(record.id, record);
    await this.#group.commit();
  }

  async delete(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.#changes.set(id, null);
    await this.#group.commit();
  }

  /** Writes what is left and lets the next process take the deliveries still waiting. */
  async close(): Promise<void> {
    try {
      await this.#group.settled();
      if (this.#changes.size > 0) await this.#group.commit();
    } finally {
      this.#sender?.release();
    }
  }

  async #write(): Promise<void> {
    if (this.#changes.size === 0) return;
    await this.#locked(async () => this.#writeOver(await this.#read()));
  }

  /**
   * Writes the file as just read (under the lock) with this process's changes over it. A torn file is
   * repaired so (see `repairTornFile`): it stays in place until the repaired one is written.
   */
  async #writeOver({ rows, torn, text }: FileRead): Promise<void> {
    if (!torn) return this.#merge(rows);
    const aside = await repairTornFile(this.file, text, this.#clock.now(), () => this.#merge(rows));
    const n = rows.length;
    this.#warn(`${this.file} was torn (not valid JSON): recovered ${n} deliver${n === 1 ? 'y' : 'ies'} from it; the torn file is kept as ${aside}`);
  }

  /** Writes `rows` (the file as just read, under the lock) with this process's changes over them. */
  async #merge(rows: Record<string, unknown>[]): Promise<void> {
    this.#forgetDeadOwners(rows);
    const changes = this.#changes;
    this.#changes = new Map();
    // Which deliveries this process sends once the file says so: applied only after the write succeeded.
    const waiting = new Map<string, boolean>();
    try {
      const lines: string[] = [];
      const matched = new Set<string>();
      for (const row of rows) {
        const id = row.id as string;
        if (!changes.has(id)) lines.push(JSON.stringify(row));
        else {
          matched.add(id);
          const record = changes.get(id);
          // Retention forgets finished deliveries; one another process has since taken stays.
          if (record === null) {
            if (typeof row.owner === 'string' && row.owner !== this.owner) lines.push(JSON.stringify(row));
          } else lines.push(this.#line(record!, waiting));
        }
      }
      for (const [id, record] of changes) if (record && !matched.has(id)) lines.push(this.#line(record, waiting));
      const pieces: Uint8Array[] = [OPEN];
      for (const line of lines) pieces.push(...(pieces.length > 1 ? [SEPARATOR] : []), utf8(line));
      pieces.push(CLOSE);
      await replaceFile(this.file, pieces);
    } catch (error) {
      // Not written: the next write takes every one of these changes again, unless newer ones replaced them.
      for (const [id, record] of changes) if (!this.#changes.has(id)) this.#changes.set(id, record);
      throw error;
    }
    for (const [id, mine] of waiting) {
      if (mine) this.#mine.add(id);
      else this.#mine.delete(id);
    }
  }

  /**
   * A record's line: owned by this process while it waits or is in flight, by nobody once finished.
   * Notes in `waiting` whether it is this process's, for `#mine` once the line is on disk.
   */
  #line(record: DeliveryRecord, waiting: Map<string, boolean>): string {
    const mine = record.state === 'pending' || record.state === 'delivering';
    waiting.set(record.id, mine);
    return serialiseRecord(record, mine ? this.owner : undefined);
  }

  /**
   * Clears, in `rows` (read under the lock), the owner of each finished delivery whose process is gone:
   * one that died between `claim()` and its first save left its name there, and retention keeps a
   * delivery another process owns, so no one would ever forget it. `alive` caches whose process runs.
   * @returns whether any row changed
   */
  #forgetDeadOwners(rows: Record<string, unknown>[], alive = new Map<string, LockHolder | null | false>()): boolean {
    let changed = false;
    for (const row of rows) {
      const owner = row.owner;
      if (typeof owner !== 'string' || owner === this.owner || !(row.state === 'delivered' || row.state === 'failed')) continue;
      const holder = alive.get(owner) ?? senderHolder(this.file, owner);
      alive.set(owner, holder);
      if (holder === false) {
        delete row.owner;
        changed = true;
      }
    }
    return changed;
  }

  /** Reads the file under the lock; a torn one is read as far as it goes, for `#writeOver` to repair. */
  async #read(): Promise<FileRead> {
    const text = await readTextIfExists(this.file);
    if (text === null) return { rows: [], torn: false, text: '' };
    return { ...parseOutbox(text, this.file), text };
  }

  async #locked<T>(run: () => Promise<T>): Promise<T> {
    const lock = await FileLock.acquireWithin(this.file, 'cliphook outbox', { waitMs: this.#lockWaitMs, clock: this.#clock });
    try {
      return await run();
    } finally {
      lock.release();
    }
  }
}

/**
 * Every delivery in an outbox file, for looking without a lock (each write renames a whole file into
 * place). A torn file is read as far as it goes, reported through `warn`, and left for a writer to repair.
 * @example const records = await readOutboxFile('.cliphook/outbox.json');
 */
export async function readOutboxFile(file: string, warn: (message: string) => void = defaultWarn): Promise<DeliveryRecord[]> {
  const text = await readTextIfExists(file);
  if (text === null) return [];
  const { rows, torn } = parseOutbox(text, file);
  if (torn) warn(`${file} is torn (not valid JSON): showing the ${rows.length} complete deliveries in it; the next trigger repairs it`);
  return rows.map((row) => toRecord(row)!);
}

/** Whether the process named `owner` still runs: its holder if so, `false` if it is gone. */
function senderHolder(file: string, owner: string): LockHolder | null | false {
  try {
    FileLock.acquire(senderPath(file, owner), 'cliphook sender').release();
    return false;
  } catch (error) {
    if (error instanceof FileLockedError) return error.holder;
    throw error;
  }
}

function senderPath(file: string, owner: string): string {
  return `${file}.senders/${owner.replace(/[^\w-]/g, '_')}`;
}


function defaultWarn(message: string): void {
  process.emitWarning(message, { code: 'CLIPHOOK_STORE_RECOVERED' });
}
