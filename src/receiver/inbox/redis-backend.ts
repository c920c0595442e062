import { createHash } from 'node:crypto';
import { InboxError } from '../../protocol/errors.js';
import { redactRedisUrl } from '../../store/redis-url.js';
import type { RedisLike } from '../redis-delivery-store.js';
import type { AddOutcome, InboxBackend, InboxRecord, InboxState, InboxStats } from './record.js';
import { ADD, CLAIM, EXTEND, GET, LIST, PURGE, REPLAY, SETTLE, STATS } from './redis-scripts.js';

export interface RedisInboxOptions {
  /** A connected ioredis client (the inbox does not close it), or a `redis://` URL for a client of its own. */
  redis: RedisLike | string;
  /** Prefix of every key. */
  prefix: string;
  keepDone: number;
  keepDoneMs: number;
  /**
   * Handler runs an event gets (`retries + 1`): a stalled record (its lease ended while running) had its
   * run ended with its process, which counts; with this many runs it is dead rather than claimed again.
   * Without it (`cliphook inbox`), stalled records are claimed again without a bound.
   */
  maxAttempts?: number;
  /** Dead records kept at most; past it the oldest is dropped and told to `onDropped`. @default Infinity */
  keepDead?: number;
  /** Dead records kept at most this long, in milliseconds. @default Infinity */
  keepDeadMs?: number;
  /** Told of each dead record the retention drops (never a pending or running one). */
  onDropped?: (record: InboxRecord) => void;
}

/** The fields of a record's hash, in the order they are written. */
const FIELDS = ['id', 'deliveryId', 'name', 'body', 'keys', 'source', 'state', 'attempts', 'receivedAt', 'nextAttemptAt', 'finishedAt', 'lastError'] as const;

/**
 * The Redis inbox, for several receiver processes sharing one inbox: a record is a hash, each state a
 * sorted set, and every move a Lua script (redis-scripts.ts), so of many processes claiming at once
 * each record goes to one. A claim holds for the receiver's `leaseMs`; a process that dies holding one
 * loses it when the lease ends and the record runs again elsewhere ("stalled", as BullMQ says).
 */
export class RedisInboxBackend implements InboxBackend {
  readonly where: string;
  readonly #prefix: string;
  readonly #keepDone: number;
  readonly #keepDoneMs: number;
  readonly #maxAttempts: number;
  /** keepDead and keepDeadMs as the scripts take them: -1 for no bound. */
  readonly #keepDead: [number, number];
  readonly #onDropped: (record: InboxRecord) => void;
  readonly #client: Promise<RedisLike>;
  readonly #owns: boolean;

  constructor({ redis, prefix, keepDone, keepDoneMs, maxAttempts, keepDead = Infinity, keepDeadMs = Infinity, onDropped = () => undefined }: RedisInboxOptions) {
    this.#prefix = prefix;
    this.#maxAttempts = maxAttempts ?? -1;
    this.#keepDead = [bound(keepDead), bound(keepDeadMs)];
    this.#onDropped = onDropped;
    this.#keepDone = keepDone;
    this.#keepDoneMs = keepDoneMs;
    this.#owns = typeof redis === 'string';
    this.where = typeof redis === 'string' ? `${redactRedisUrl(redis)} (${prefix})` : `Redis (${prefix})`;
    this.#client =
      typeof redis === 'string'
        ? import('ioredis').then(({ Redis }) => {
            // Fail a command after one reconnection rather than queueing it: the receiver answers 503.
            const client = new Redis(redis, { maxRetriesPerRequest: 1, commandTimeout: 5_000, retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000) });
            client.on('error', () => undefined);
            return client as unknown as RedisLike;
          })
        : Promise.resolve(redis);
    this.#client.catch(() => undefined);
  }

  /** Nothing to load: a Redis that is away now fails each call (503 to the sender) until it is back, not the inbox for good. */
  async open(): Promise<void> {
    await this.#client;
  }

  async add(record: InboxRecord, maxPending: number, maxPendingBytes = Infinity): Promise<AddOutcome> {
    const limit = Number.isFinite(maxPendingBytes) ? maxPendingBytes : -1;
    return (await this.#run(ADD, record.id, maxPending, record.nextAttemptAt ?? record.receivedAt, limit, Buffer.byteLength(record.body), ...encode(record))) as AddOutcome;
  }

  async claim(now: number, leaseUntil: number, owner: string, limit: number): Promise<InboxRecord[]> {
    const [rows, dropped] = (await this.#run(CLAIM, now, leaseUntil, owner, limit, this.#maxAttempts, STALLED_ERROR, ...this.#keepDead)) as [string[][], string[][]];
    this.#dropped(dropped);
    return rows.map((row) => decode(row));
  }

  async settle(record: InboxRecord, owner: string, now: number): Promise<boolean> {
    const score = record.state === 'pending' ? (record.nextAttemptAt ?? now) : (record.finishedAt ?? now);
    const fields = ['nextAttemptAt', text(record.nextAttemptAt), 'finishedAt', text(record.finishedAt), 'lastError', text(record.lastError)];
    const [kept, dropped] = (await this.#run(SETTLE, record.id, owner, record.state, score, now, this.#keepDone, this.#keepDoneMs, ...this.#keepDead, ...fields)) as [number, string[][]?];
    this.#dropped(dropped ?? []);
    return kept === 1;
  }

  async extend(id: string, owner: string, leaseUntil: number): Promise<boolean> {
    return (await this.#run(EXTEND, id, owner, leaseUntil)) === 1;
  }

  async get(id: string): Promise<InboxRecord | undefined> {
    const row = (await this.#run(GET, id)) as string[];
    return row.length === 0 ? undefined : decode(row, id);
  }

  async list(state: InboxState | undefined, limit: number): Promise<InboxRecord[]> {
    const states: InboxState[] = state ? [state] : ['pending', 'running', 'dead', 'done'];
    const all: InboxRecord[] = [];
    for (const s of states) for (const row of (await this.#run(LIST, s, limit)) as string[][]) all.push(decode(row));
    all.sort((a, b) => b.receivedAt - a.receivedAt);
    return all.slice(0, limit);
  }

  async replay(id: string, now: number): Promise<InboxRecord> {
    const outcome = (await this.#run(REPLAY, id, now)) as string;
    if (outcome === 'missing') throw new InboxError('inbox_record_not_found', id, `No event ${JSON.stringify(id)} in the inbox ${this.where}.`);
    if (outcome !== 'replayed') throw new InboxError('inbox_not_replayable', id, `Event ${id} is ${outcome}: only a dead or done event can be replayed.`);
    return (await this.get(id))!;
  }

  async purge(state: 'dead' | 'done', before: number): Promise<number> {
    let total = 0;
    for (;;) {
      const count = Number(await this.#run(PURGE, state, before));
      total += count;
      if (count < 1000) return total;
    }
  }

  async stats(): Promise<InboxStats> {
    const [pending, running, dead, done] = ((await this.#run(STATS)) as Array<number | string>).map(Number);
    return { pending: pending!, running: running!, dead: dead!, done: done! };
  }

  async nextDue(): Promise<number | null> {
    const due = ((await this.#run(STATS)) as Array<number | string>)[4];
    return due === '' || due === undefined ? null : Number(due);
  }

  async close(): Promise<void> {
    if (this.#owns) await (await this.#client).quit();
  }

  #dropped(rows: readonly string[][]): void {
    for (const row of rows) this.#onDropped(decode(row));
  }

  /** One EVALSHA (EVAL when Redis has not cached the script yet). */
  async #run(script: string, ...argv: Array<string | number>): Promise<unknown> {
    const client = await this.#client;
    const args: [number, ...Array<string | number>] = [0, this.#prefix, ...argv];
    if (!client.evalsha) return client.eval(script, ...args);
    try {
      return await client.evalsha(sha1(script), ...args);
    } catch (error) {
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(script, ...args);
    }
  }
}

/** A stalled record's `lastError` once it had its last run (Lua's string.format: runs, maxAttempts). */
const STALLED_ERROR = 'The process ended while the inbox was running it (run %d of %d), or it stopped renewing its lease: a handler that exits or crashes the process?';

/** A bound as the scripts take it: -1 for none. */
function bound(value: number): number {
  return Number.isFinite(value) ? value : -1;
}

function text(value: number | string | null): string {
  return value === null ? '' : String(value);
}

function encode(record: InboxRecord): string[] {
  const out: string[] = [];
  for (const field of FIELDS) {
    const value = record[field];
    out.push(field, field === 'keys' ? JSON.stringify(value) : text(value as number | string | null));
  }
  return out;
}

function decode(row: readonly string[], id?: string): InboxRecord {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < row.length; i += 2) hash[row[i]!] = row[i + 1]!;
  const num = (value: string | undefined) => (value === undefined || value === '' ? null : Number(value));
  return {
    id: id ?? hash.id ?? '',
    // A record stored without its delivery id is keyed by it.
    deliveryId: hash.deliveryId ?? id ?? hash.id ?? '',
    name: hash.name ?? '',
    body: hash.body ?? '',
    keys: JSON.parse(hash.keys ?? '[]') as string[],
    source: (hash.source ?? 'webhook') as InboxRecord['source'],
    state: (hash.state ?? 'pending') as InboxState,
    attempts: num(hash.attempts) ?? 0,
    receivedAt: num(hash.receivedAt) ?? 0,
    nextAttemptAt: num(hash.nextAttemptAt),
    finishedAt: num(hash.finishedAt),
    lastError: hash.lastError === undefined || hash.lastError === '' ? null : hash.lastError,
  };
}

const shas = new Map<string, string>();
function sha1(script: string): string {
  let sha = shas.get(script);
  if (sha === undefined) shas.set(script, (sha = createHash('sha1').update(script).digest('hex')));
  return sha;
}
