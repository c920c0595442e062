import { rename } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DeliveryLedger, type ClaimOutcome, type DeliveryStore, type DeliveryStoreOptions } from './delivery-store.js';
import { JsonFile } from '../store/json-file.js';

export interface FileDeliveryStoreOptions extends DeliveryStoreOptions {
  /** The JSON file. @default '.cliphook/deliveries.json' */
  file?: string;
}

/** On disk: `{ "version": 1, "processed": [[key, completedAtMs], …] }`, oldest first. */
interface DeliveriesFile {
  version: 1;
  processed: [string, number][];
}

export const DEFAULT_DELIVERIES_FILE = '.cliphook/deliveries.json';

/** Stores open in this process, by absolute path: two on one file would overwrite each other's marks. */
const openStores = new Map<string, FileDeliveryStore>();

/** One processed record as written to the file; `dead` once the key was completed again later. */
interface Row {
  key: string;
  at: number;
  line: string;
  /** Position in completion order since this store opened; its chunk is `index / CHUNK`. */
  index: number;
  dead: boolean;
}

// Rows are joined per chunk once and the chunk string is reused by every later write, so a write costs
// O(chunks + CHUNK), not O(retained rows): with 100k deliveries retained, serialising every row on each
// group commit capped the store near 500 claims/s (bench/file-store.ts).
const CHUNK = 1024;
const FILE_HEAD = Buffer.from('{"version":1,"processed":[');
const COMMA = Buffer.from(',');
const FILE_TAIL = Buffer.from(']}');

/**
 * The default delivery store: a lowdb JSON file that survives restarts. Claims live in memory (a claim
 * lost in a crash only means the sender's retry runs the handler, which is what a lease expiry would
 * do); completions are written with group commit before the receiver answers. One process per file;
 * use the Redis store for several.
 * @example new FileDeliveryStore({ file: '.cliphook/deliveries.json', retentionMs: 86_400_000 })
 */
export class FileDeliveryStore implements DeliveryStore {
  readonly file: string;
  readonly #ledger: DeliveryLedger;
  readonly #json: JsonFile<DeliveriesFile>;
  // Processed records never change, so each is serialised once, in the ledger's completion order.
  #rows: Row[] = [];
  /** Rows before this position were pruned. */
  #head = 0;
  /** The `index` of `#rows[0]`. */
  #base = 0;
  #next = 0;
  /** The live row of each key. */
  readonly #byKey = new Map<string, Row>();
  /** Joined lines of full chunks as UTF-8, by chunk number. */
  readonly #chunks = new Map<number, Buffer>();
  readonly #ready: Promise<void>;

  constructor({ file = DEFAULT_DELIVERIES_FILE, ...options }: FileDeliveryStoreOptions = {}) {
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
    this.#json = new JsonFile<DeliveriesFile>({
      file,
      snapshot: () => ({ version: 1, processed: [] }),
      stringify: () => this.#serialise(),
    });
    openStores.set(path, this);
    this.#ready = this.#load();
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

  /** Writes that reached the disk so far (for benchmarks and tests of group commit). */
  get writes(): number {
    return this.#json.writes;
  }

  async claim(keys: readonly string[], leaseMs: number, owner: string): Promise<ClaimOutcome> {
    await this.#ready;
    return this.#ledger.claim(keys, leaseMs, owner);
  }

  async complete(keys: readonly string[]): Promise<void> {
    await this.#ready;
    const at = this.#ledger.clock();
    this.#ledger.complete(keys, at);
    for (const key of keys) this.#append(key, at);
    await this.#json.commit();
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    await this.#ready;
    this.#ledger.release(keys, owner);
  }

  /** Writes what is pending and lets another store open the file. */
  async close(): Promise<void> {
    try {
      await this.#ready;
      await this.#json.commit();
    } finally {
      const path = resolve(this.file);
      if (openStores.get(path) === this) openStores.delete(path);
    }
  }

  async #load(): Promise<void> {
    let data: DeliveriesFile | null;
    try {
      data = await this.#json.read();
    } catch (error) {
      if (!((error as Error).cause instanceof SyntaxError)) throw error;
      // A torn or empty file (a crash between write and rename on some file systems) must not turn every
      // webhook into a 500: keep it aside for inspection and start afresh; at worst a retry runs twice.
      const aside = `${this.file}.corrupt-${Date.now()}`;
      await rename(this.file, aside);
      process.emitWarning(`${this.file} was not valid JSON; moved to ${aside} and started empty.`, { code: 'CLIPHOOK_STORE_RECOVERED' });
      return;
    }
    if (data === null) return;
    if (data.version !== 1 || !Array.isArray(data.processed)) {
      throw new Error(`${this.file} is not a cliphook deliveries file (expected version 1).`);
    }
    const sorted = data.processed.filter(
      (row): row is [string, number] => Array.isArray(row) && typeof row[0] === 'string' && Number.isFinite(row[1]),
    );
    sorted.sort((a, b) => a[1] - b[1]);
    for (const [key, at] of sorted) {
      this.#ledger.complete([key], at);
      this.#append(key, at);
    }
    this.#ledger.prune();
  }

  /** Mirrors `ledger.complete(key, at)`: the ledger moves the key to the end, so its old row dies. */
  #append(key: string, at: number): void {
    const old = this.#byKey.get(key);
    if (old) {
      old.dead = true;
      this.#chunks.delete(Math.floor(old.index / CHUNK));
    }
    const row: Row = { key, at, line: `[${JSON.stringify(key)},${at}]`, index: this.#next++, dead: false };
    this.#rows.push(row);
    this.#byKey.set(key, row);
  }

  #serialise(): Buffer[] {
    this.#ledger.prune();
    // The ledger forgets processed keys only from the front of its completion order (retention), so
    // the rows it dropped are a prefix of ours.
    const rows = this.#rows;
    while (this.#head < rows.length) {
      const row = rows[this.#head]!;
      if (!row.dead) {
        const entry = this.#ledger.entries.get(row.key);
        if (entry && !entry.processing && entry.at === row.at) break;
        this.#byKey.delete(row.key);
      }
      this.#head++;
    }
    if (this.#head > 4 * CHUNK && this.#head * 2 > rows.length) {
      this.#rows = rows.slice(this.#head);
      this.#base += this.#head;
      this.#head = 0;
    }
    const first = this.#base + this.#head;
    const end = this.#base + this.#rows.length;
    const parts: Buffer[] = [FILE_HEAD];
    for (let chunk = Math.floor(first / CHUNK); chunk * CHUNK < end; chunk++) {
      const from = Math.max(chunk * CHUNK, first);
      const to = Math.min((chunk + 1) * CHUNK, end);
      // Only a chunk that is complete and untouched by pruning is cached; the ends are joined afresh.
      const whole = from === chunk * CHUNK && to === (chunk + 1) * CHUNK;
      let bytes = whole ? this.#chunks.get(chunk) : undefined;
      if (bytes === undefined) {
        const lines: string[] = [];
        for (let i = from; i < to; i++) {
          const row = this.#rows[i - this.#base]!;
          if (!row.dead) lines.push(row.line);
        }
        bytes = Buffer.from(lines.join(','), 'utf8');
        if (whole) this.#chunks.set(chunk, bytes);
      }
      if (bytes.length === 0) continue;
      if (parts.length > 1) parts.push(COMMA);
      parts.push(bytes);
    }
    for (const chunk of this.#chunks.keys()) if ((chunk + 1) * CHUNK <= first) this.#chunks.delete(chunk);
    parts.push(FILE_TAIL);
    return parts;
  }
}
