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
  // Processed records never change, so each is serialised once and the file is a join of cached lines.
  #lines = new Map<string, string>();
  readonly #ready: Promise<void>;

  constructor({ file = DEFAULT_DELIVERIES_FILE, ...options }: FileDeliveryStoreOptions = {}) {
    if (typeof file !== 'string' || file.length === 0) {
      throw new TypeError(`Expected \`file\` to be a non-empty path, got ${JSON.stringify(file)}.`);
    }
    this.file = file;
    this.#ledger = new DeliveryLedger(options);
    this.#json = new JsonFile<DeliveriesFile>({
      file,
      snapshot: () => ({ version: 1, processed: [] }),
      stringify: () => this.#serialise(),
    });
    this.#ready = this.#load();
    // Surface a bad file on first use, not as an unhandled rejection now.
    this.#ready.catch(() => undefined);
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
    this.#ledger.complete(keys);
    await this.#json.commit();
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    await this.#ready;
    this.#ledger.release(keys, owner);
  }

  async close(): Promise<void> {
    await this.#ready;
    await this.#json.commit();
  }

  async #load(): Promise<void> {
    const data = await this.#json.read();
    if (data === null) return;
    if (data.version !== 1 || !Array.isArray(data.processed)) {
      throw new Error(`${this.file} is not a cliphook deliveries file (expected version 1).`);
    }
    const sorted = data.processed.filter(
      (row): row is [string, number] => Array.isArray(row) && typeof row[0] === 'string' && Number.isFinite(row[1]),
    );
    sorted.sort((a, b) => a[1] - b[1]);
    for (const [key, at] of sorted) this.#ledger.complete([key], at);
    this.#ledger.prune();
  }

  #serialise(): string {
    this.#ledger.prune();
    const rows: string[] = [];
    const lines = new Map<string, string>();
    for (const [key, at] of this.#ledger.processed()) {
      let line = this.#lines.get(key);
      if (line === undefined || !line.endsWith(`,${at}]`)) line = `[${JSON.stringify(key)},${at}]`;
      lines.set(key, line);
      rows.push(line);
    }
    this.#lines = lines; // pruned keys drop out here
    return `{"version":1,"processed":[${rows.join(',')}]}`;
  }
}
