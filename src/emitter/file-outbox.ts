import { JsonFile } from '../store/json-file.js';
import { isWebhookEventName } from '../protocol/events.js';
import type { Outbox } from './outbox.js';
import type { DeliveryRecord, DeliveryState } from './types.js';

export interface FileOutboxOptions {
  /**
   * The JSON file. It holds each delivery's signing secret (retries after a restart must be signed),
   * so keep it out of version control and readable by the emitting process only.
   * @default '.cliphook/outbox.json'
   */
  file?: string;
}

/** Where `FileOutbox` keeps deliveries unless told otherwise, relative to the working directory. */
export const DEFAULT_OUTBOX_FILE = '.cliphook/outbox.json';

const STATES: readonly DeliveryState[] = ['pending', 'delivering', 'delivered', 'failed'];

/**
 * The embedded default outbox: a lowdb JSON file (atomic rename writes) with group commit, so a burst
 * of sends costs a couple of writes, not one each. A delivery is in the file before its first attempt.
 * One process per file.
 * @example createEmitter({ store: new FileOutbox({ file: '.cliphook/outbox.json' }) })
 */
export class FileOutbox implements Outbox {
  readonly file: string;
  readonly #json: JsonFile<unknown>;
  readonly #records = new Map<string, DeliveryRecord>();
  // Each record's serialised form is kept and reused by every write until its next save(), so a write
  // re-serialises only what changed. Deliveries waiting for a retry are the exception: they can be
  // 100,000 at a time for hours, so they are serialised at each write instead of costing memory twice.
  readonly #lines = new Map<string, string>();
  #loaded: Promise<void> | null = null;

  constructor({ file = DEFAULT_OUTBOX_FILE }: FileOutboxOptions = {}) {
    if (typeof file !== 'string' || file.length === 0) {
      throw new TypeError(`Expected \`file\` to be a non-empty path, got ${JSON.stringify(file)}.`);
    }
    this.file = file;
    this.#json = new JsonFile<unknown>({ file, snapshot: () => ({}), stringify: () => this.#serialise() });
  }

  /** Writes that reached the disk so far (group commit keeps this far below the number of saves). */
  get writes(): number {
    return this.#json.writes;
  }

  async load(): Promise<DeliveryRecord[]> {
    await this.#ensureLoaded();
    return [...this.#records.values()].map((record) => ({ ...record, attempts: [...record.attempts] }));
  }

  async save(record: DeliveryRecord): Promise<void> {
    await this.#ensureLoaded();
    this.#records.set(record.id, record);
    this.#lines.delete(record.id);
    await this.#json.commit();
  }

  async delete(ids: readonly string[]): Promise<void> {
    await this.#ensureLoaded();
    for (const id of ids) {
      this.#records.delete(id);
      this.#lines.delete(id);
    }
    await this.#json.commit();
  }

  async close(): Promise<void> {
    if (this.#loaded === null) return;
    await this.#loaded;
    await this.#json.commit();
  }

  #ensureLoaded(): Promise<void> {
    this.#loaded ??= this.#read();
    return this.#loaded;
  }

  async #read(): Promise<void> {
    const data = (await this.#json.read()) as { version?: unknown; deliveries?: unknown } | null;
    if (data === null) return;
    if (data.version !== 1 || !Array.isArray(data.deliveries)) {
      throw new Error(`${this.file} is not a cliphook outbox file (expected version 1).`);
    }
    for (const row of data.deliveries as unknown[]) {
      const record = toRecord(row);
      if (!record) throw new Error(`${this.file} holds a malformed delivery: ${JSON.stringify(row).slice(0, 120)}`);
      this.#records.set(record.id, record);
    }
  }

  #serialise(): string {
    const rows: string[] = [];
    for (const record of this.#records.values()) {
      let line = this.#lines.get(record.id);
      if (line === undefined) {
        line = serialiseRecord(record);
        if (!(record.state === 'pending' && record.attempts.length > 0)) this.#lines.set(record.id, line);
      }
      rows.push(line);
    }
    return `{"version":1,"deliveries":[\n${rows.join(',\n')}\n]}\n`;
  }
}

function serialiseRecord(r: DeliveryRecord): string {
  const head = JSON.stringify({
    id: r.id, url: r.url, secret: r.secret, event: r.event, state: r.state, retry: r.retry,
    createdAt: r.createdAt, nextAttemptAt: r.nextAttemptAt, round: r.round, attempts: r.attempts,
  });
  // The payload is already JSON: spliced in as is, it stays readable in the file and costs no re-encoding.
  return `${head.slice(0, -1)},"payload":${r.payload}}`;
}

function toRecord(row: unknown): DeliveryRecord | null {
  if (typeof row !== 'object' || row === null) return null;
  const r = row as Record<string, unknown>;
  const ok =
    typeof r.id === 'string' && typeof r.url === 'string' && typeof r.secret === 'string' && isWebhookEventName(r.event) &&
    STATES.includes(r.state as DeliveryState) && typeof r.createdAt === 'number' &&
    (r.nextAttemptAt === null || typeof r.nextAttemptAt === 'number') && Array.isArray(r.attempts) &&
    typeof r.payload === 'object' && r.payload !== null;
  if (!ok) return null;
  return {
    id: r.id as string,
    url: r.url as string,
    secret: r.secret as string,
    event: r.event as DeliveryRecord['event'],
    state: r.state as DeliveryState,
    retry: r.retry !== false,
    createdAt: r.createdAt as number,
    nextAttemptAt: r.nextAttemptAt as number | null,
    round: Number.isSafeInteger(r.round) ? (r.round as number) : 0,
    attempts: r.attempts as DeliveryRecord['attempts'],
    payload: JSON.stringify(r.payload),
  };
}
