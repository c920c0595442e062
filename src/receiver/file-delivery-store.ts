import { rename } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DeliveryLedger, type ClaimOutcome, type DeliveryStore, type DeliveryStoreOptions } from './delivery-store.js';
import { FileLock } from '../store/file-lock.js';
import { JournalFile } from '../store/journal-file.js';
import { RowChunks } from '../store/row-chunks.js';

export interface FileDeliveryStoreOptions extends DeliveryStoreOptions {
  /** The JSON file; its journal is `<file>.journal` beside it. @default '.cliphook/deliveries.json' */
  file?: string;
  /**
   * Flush each group commit to the storage device (`fdatasync`) before the receiver answers, so a
   * 200 survives a power cut too, not only a crash of the process. Costs a disk flush per group
   * commit (the requests of one flush share it). @default false
   */
  fsync?: boolean;
}

/**
 * The snapshot: `{ "version": 1, "processed": [[key, …, completedAtMs], …] }`, a row per delivery in the
 * journal's line format. (Before 0.1 a row held one key, `[key, at]`; both load.)
 */
interface DeliveriesFile {
  version: 1;
  processed: JournalLine[];
}

/** A key completed at a time. */
type Completion = [string, number];
/** One journal line or snapshot row: the keys of one delivery, then the time they were completed. */
type JournalLine = (string | number)[];

const SNAPSHOT_HEAD = '{"version":1,"processed":[';
const SNAPSHOT_TAIL = ']}';

export const DEFAULT_DELIVERIES_FILE = '.cliphook/deliveries.json';

/** Stores open in this process, by absolute path: two on one file would overwrite each other's marks. */
const openStores = new Map<string, FileDeliveryStore>();

/**
 * The default delivery store: a lowdb JSON snapshot plus an append-only journal, remembered across
 * restarts. Claims live in memory (a claim lost in a crash only means the sender's retry runs the
 * handler, which is what a lease expiry would do); each completion is appended to the journal with
 * group commit before the receiver answers, and the snapshot is rewritten only once the journal has
 * grown as long as it. One store per file: a second one in this process is a TypeError, one in another
 * process a `FileLockedError` (the file's `<file>.lock`).
 * @example new FileDeliveryStore({ file: '.cliphook/deliveries.json', retentionMs: 86_400_000 })
 */
export class FileDeliveryStore implements DeliveryStore {
  readonly file: string;
  readonly #ledger: DeliveryLedger;
  /** Every retained delivery's row, as the text the next snapshot writes. */
  readonly #rows = new RowChunks();
  readonly #journal: JournalFile<DeliveriesFile | RowChunks, JournalLine>;
  readonly #ready: Promise<void>;
  /** Set once the file is loaded: the hot path then skips awaiting `#ready`. */
  #loaded = false;
  readonly #lock: FileLock;

  constructor({ file = DEFAULT_DELIVERIES_FILE, fsync = false, ...options }: FileDeliveryStoreOptions = {}) {
    if (typeof file !== 'string' || file.length === 0) {
      throw new TypeError(`Expected \`file\` to be a non-empty path, got ${JSON.stringify(file)}.`);
    }
    const path = resolve(file);
    if (openStores.has(path)) {
      throw new TypeError(
        `${file} is already open by another FileDeliveryStore in this process; share that instance ` +
          '(FileDeliveryStore.shared) or close it first: two stores on one file overwrite each other.',
      );
    }
    this.file = file;
    this.#ledger = new DeliveryLedger(options);
    this.#journal = new JournalFile<DeliveriesFile | RowChunks, JournalLine>({
      file,
      fsync,
      // The rows already hold every completion as text: a snapshot only drops expired chunks.
      snapshot: () => {
        const now = this.#ledger.clock();
        this.#ledger.prune(now);
        this.#rows.prune(now - this.#ledger.retentionMs);
        return this.#rows;
      },
      stringify: (snapshot) => (snapshot instanceof RowChunks ? snapshot.pieces(SNAPSHOT_HEAD, SNAPSHOT_TAIL) : JSON.stringify(snapshot)),
      sizeOf: (snapshot) => (snapshot instanceof RowChunks ? snapshot.rows : Array.isArray(snapshot?.processed) ? snapshot.processed.length : 0),
    });
    // Last, so nothing that can throw comes after it and leaves the lock held.
    this.#lock = FileLock.acquire(file, 'FileDeliveryStore');
    openStores.set(path, this);
    this.#ready = this.#load().then(() => void (this.#loaded = true));
    // Surface a bad file on first use, not as an unhandled rejection now.
    this.#ready.catch(() => undefined);
  }

  /**
   * The store this process has open on `file`, or a new one. Receivers created without a `store` share
   * the default file this way, so two receivers in one app do not overwrite each other's marks.
   * @example createReceiver({ secret, store: FileDeliveryStore.shared({ file: 'data/deliveries.json' }) })
   */
  static shared(options: FileDeliveryStoreOptions = {}): FileDeliveryStore {
    return openStores.get(resolve(options.file ?? DEFAULT_DELIVERIES_FILE)) ?? new FileDeliveryStore(options);
  }

  /** Writes that reached the disk so far (journal appends and snapshots): for benchmarks and tests. */
  get writes(): number {
    return this.#journal.writes;
  }

  /** Answers from memory once the file is loaded; until then, a promise. */
  claim(keys: readonly string[], leaseMs: number, owner: string): ClaimOutcome | Promise<ClaimOutcome> {
    if (!this.#loaded) return this.#ready.then(() => this.#ledger.claim(keys, leaseMs, owner));
    return this.#ledger.claim(keys, leaseMs, owner);
  }

  complete(keys: readonly string[]): Promise<void> {
    if (!this.#loaded) return this.#ready.then(() => this.complete(keys));
    const at = this.#ledger.clock();
    this.#ledger.complete(keys, at);
    this.#rows.add(this.#journal.append([...keys, at]), at);
    return this.#journal.commit();
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    if (!this.#loaded) await this.#ready;
    this.#ledger.release(keys, owner);
  }

  /** Writes what is pending (as a fresh snapshot) and lets another store, in any process, open the file. */
  async close(): Promise<void> {
    try {
      await this.#ready;
      await this.#journal.close();
    } finally {
      this.#lock.release();
      const path = resolve(this.file);
      if (openStores.get(path) === this) openStores.delete(path);
    }
  }

  async #load(): Promise<void> {
    let read;
    try {
      read = await this.#journal.read();
    } catch (error) {
      if (!((error as Error).cause instanceof SyntaxError)) throw error;
      // A torn or empty snapshot (a crash between write and rename on some file systems) must not turn
      // every webhook into a 500: keep it aside for inspection and start afresh; at worst a retry runs twice.
      const aside = `${this.file}.corrupt-${Date.now()}`;
      await rename(this.file, aside);
      process.emitWarning(`${this.file} was not valid JSON; moved to ${aside} and started empty.`, { code: 'CLIPHOOK_STORE_RECOVERED' });
      read = await this.#journal.read();
    }
    const { entries } = read;
    const snapshot = read.snapshot as DeliveriesFile | null;
    if (snapshot !== null && (snapshot.version !== 1 || !Array.isArray(snapshot.processed))) {
      throw new Error(`${this.file} is not a cliphook deliveries file (expected version 1).`);
    }
    const rows: Completion[] = [];
    for (const line of [...(snapshot?.processed ?? []), ...entries]) {
      if (!Array.isArray(line) || line.length < 2) continue;
      const at = line[line.length - 1];
      if (typeof at !== 'number' || !Number.isFinite(at)) continue;
      const keys = line.slice(0, -1).filter((key): key is string => typeof key === 'string');
      if (keys.length === 0) continue;
      for (const key of keys) rows.push([key, at]);
    }
    // The ledger prunes from the front, so it must see completions oldest first (a stable sort keeps
    // the journal's order among equal times).
    rows.sort((a, b) => a[1] - b[1]);
    for (const [key, at] of rows) this.#ledger.complete([key], at);
    this.#ledger.prune();
    // The loaded keys, deduplicated (a crash between a compaction and its truncation leaves both), are
    // serialised once here, a row per run of keys completed at the same time (one delivery's keys sit
    // together); from now on each completion adds its own journal line.
    let run: JournalLine = [];
    const flush = () => {
      if (run.length > 0) this.#rows.add(JSON.stringify(run), run[run.length - 1] as number);
    };
    for (const [key, at] of this.#ledger.processed()) {
      if (run.length > 0 && run[run.length - 1] === at) run.splice(run.length - 1, 0, key);
      else {
        flush();
        run = [key, at];
      }
    }
    flush();
  }
}
