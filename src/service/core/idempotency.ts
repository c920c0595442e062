import { createHash } from 'node:crypto';
import { IDEMPOTENCY_KEY_PATTERN } from '../contract/common.js';
import { LIMITS } from '../contract/limits.js';
import type { Table } from './store.js';

/** Spec section 7: a key's replay window. */
export const IDEMPOTENCY_WINDOW_MS = LIMITS.idempotencyWindowMs;

/** A response kept for replay: what the first request answered. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

/** One key's record, kept in the service's store so replays survive a restart. */
export interface IdempotencyRow {
  /** `<account id>:<key>`: keys are the account's, as Stripe scopes them. */
  id: string;
  /** What the first request asked: method, path and body, canonicalised and hashed. */
  fingerprint: string;
  createdAt: number;
  response: StoredResponse;
  /** How long it is replayed (the assistant's repeat of the same arguments: 2 minutes). @default 24 h */
  windowMs?: number;
}

/** What one key's rules are, beyond the fingerprint (the assistant's repeats are keys too). */
export interface KeyRules {
  /** How long the first answer is replayed. @default 24 h (spec 7) */
  windowMs?: number;
}

export type IdempotencyStart =
  /**
   * First use (or the window passed, or the first request failed): run it, then `finish` (here, joining the
   * operation's commit), then, once that commit is durable, `share` (the record for other processes on
   * Redis; nothing to wait for without one). A failure calls both with `null`, which releases the key.
   */
  | { kind: 'fresh'; finish(response: StoredResponse | null): void; share(response: StoredResponse | null): Promise<void> | void }
  /** The same request again within 24 h: answer `response` with `Idempotent-Replayed: true`. */
  | { kind: 'replay'; response: StoredResponse }
  /** 409 idempotency_in_progress: the first request with this key is still running. */
  | { kind: 'in_progress' }
  /** 422 idempotency_key_reused: the key was used for another request. */
  | { kind: 'reused' };

/** What a shared store of keys (Redis, `redis/idempotency.ts`) found; `fresh` carries the write that records (or releases) the key there. */
export type SharedStart = Exclude<IdempotencyStart, { kind: 'fresh' }> | { kind: 'fresh'; finish(response: StoredResponse | null): Promise<void> };

/** The records every process shares, when there is more than one (the Redis one implements it). */
export interface SharedIdempotency {
  begin(id: string, fingerprint: string): Promise<SharedStart>;
  forget(id: string): Promise<void>;
}

/**
 * The `Idempotency-Key` header's syntax (spec 4.1): 1-255 printable ASCII characters (0x21-0x7E).
 * Returns the key, `null` when absent, or `false` when malformed (400 invalid_idempotency_key).
 */
export function parseIdempotencyKey(header: string | readonly string[] | undefined): string | null | false {
  if (header === undefined) return null;
  if (typeof header !== 'string') return false;
  return IDEMPOTENCY_KEY_PATTERN.test(header) ? header : false;
}

/**
 * The idempotency rules of spec section 7, for POST /videos, /videos/batch and /images. A request that
 * succeeded is kept 24 h and replayed; one still running makes a second one wait (409); another body under
 * the same key is refused (422); a request that failed before a task existed releases the key.
 * The record is put before the operation's commit (`create-once.ts`), so a crash keeps the task and its key, or neither.
 */
export class Idempotency {
  readonly #table: Table<IdempotencyRow>;
  readonly #now: () => number;
  /** Keys whose first request is running, with its fingerprint: in memory, as a restart ends them. */
  readonly #running = new Map<string, string>();
  readonly #shared: SharedIdempotency | undefined;
  #sweepAt = 0;

  /** With `shared`, the records are also kept in Redis, so every process on it sees every key. */
  /** The time past records are dropped by: the service's own, which no account's time is behind. */
  readonly #sweepNow: () => number;

  constructor({ table, now, sweepNow = now, shared }: { table: Table<IdempotencyRow>; now: () => number; sweepNow?: () => number; shared?: SharedIdempotency }) {
    this.#sweepNow = sweepNow;
    this.#table = table;
    this.#now = now;
    this.#shared = shared;
  }

  /** Looks in this process first, then, for a key it does not know, in Redis. */
  /**
   * `sharedScope` names the caller in Redis (the hash of its API key: account ids are each process's
   * own); it defaults to `scope`. Given as a function, it is called only with Redis (no Redis,
   * no Redis code on the request's path).
   */
  begin(scope: string, key: string, fingerprint: string, sharedScope: string | (() => string) = scope): IdempotencyStart | Promise<IdempotencyStart> {
    const local = this.#beginHere(scope, key, fingerprint);
    // In this process only, the answer is at once (no promise per request).
    if (local.kind !== 'fresh' || !this.#shared) return local;
    return this.#beginShared(this.#shared, local, key, fingerprint, sharedScope);
  }

  async #beginShared(records: SharedIdempotency, local: Extract<IdempotencyStart, { kind: 'fresh' }>, key: string, fingerprint: string, sharedScope: string | (() => string)): Promise<IdempotencyStart> {
    let shared;
    try {
      shared = await records.begin(`${typeof sharedScope === 'function' ? sharedScope() : sharedScope}:${key}`, fingerprint);
    } catch (error) {
      local.finish(null);
      throw error;
    }
    if (shared.kind === 'fresh') return { kind: 'fresh', finish: local.finish, share: shared.finish };
    local.finish(null);
    return shared;
  }

  /**
   * Looks in this process only, at once (no Redis): what the assistant's spending rules use, so a repeat
   * that arrives while the first call runs finds it running.
   */
  beginHere(scope: string, key: string, fingerprint: string, rules: KeyRules = {}): IdempotencyStart {
    return this.#beginHere(scope, key, fingerprint, rules);
  }

  #beginHere(scope: string, key: string, fingerprint: string, { windowMs = IDEMPOTENCY_WINDOW_MS }: KeyRules = {}): IdempotencyStart {
    const id = `${scope}:${key}`;
    const now = this.#now();
    this.#sweep(this.#sweepNow());
    const running = this.#running.get(id);
    if (running !== undefined) return running === fingerprint ? { kind: 'in_progress' } : { kind: 'reused' };
    const row = this.#table.get(id);
    if (row && now < row.createdAt + (row.windowMs ?? IDEMPOTENCY_WINDOW_MS)) {
      return row.fingerprint === fingerprint ? { kind: 'replay', response: row.response } : { kind: 'reused' };
    }
    if (row) this.#table.remove(id);
    this.#running.set(id, fingerprint);
    let finished = false;
    return {
      kind: 'fresh',
      share: () => undefined,
      finish: (response) => {
        if (finished) return;
        finished = true;
        this.#running.delete(id);
        // Spec 7: only a request that made its task keeps the key; a failure before one releases it.
        if (response && response.status >= 200 && response.status < 300) {
          this.#table.put({ id, fingerprint, createdAt: this.#now(), response, ...(windowMs === IDEMPOTENCY_WINDOW_MS ? {} : { windowMs }) });
        }
      },
    };
  }

  /** Forgets a key's record (its request's write failed and was undone): the key can be used again. */
  async forget(scope: string, key: string, sharedScope = scope): Promise<void> {
    this.#table.remove(`${scope}:${key}`);
    await this.#shared?.forget(`${sharedScope}:${key}`);
  }

  /** Drops records past their window, at most once an hour. */
  #sweep(now: number): void {
    if (now < this.#sweepAt) return;
    this.#sweepAt = now + 60 * 60 * 1000;
    for (const row of [...this.#table.values()]) if (now >= row.createdAt + (row.windowMs ?? IDEMPOTENCY_WINDOW_MS)) this.#table.remove(row.id);
  }
}

/**
 * What a request asks, independent of key order and whitespace: the same JSON body sent twice by
 * different clients or serialisers is the same request.
 * @example fingerprint('POST', '/v1/videos', { prompt: 'x', duration: 5 })
 */
export function fingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n`).update(canonicalJson(body)).digest('hex');
}

/**
 * JSON with object keys sorted at every depth: the one canonical form of a request (an Idempotency-Key's
 * fingerprint, and the assistant's repeat of the same arguments). A member whose value is
 * `undefined` is left out, as `JSON.stringify` leaves it out.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const entries = Object.keys(value).filter((key) => record[key] !== undefined).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
