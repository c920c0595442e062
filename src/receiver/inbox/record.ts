// The inbox's record and its states, shared by every back end. No Node module: the core imports these types.

/**
 * Where an inbox record stands, as BullMQ names a job's: `pending` (waiting or delayed until
 * `nextAttemptAt`), `running` (a handler has it), `dead` (failed `retries + 1` times: kept, replayable),
 * `done` (the handlers succeeded; kept for a bounded time and count).
 */
export type InboxState = 'pending' | 'running' | 'dead' | 'done';

export const INBOX_STATES: readonly InboxState[] = ['pending', 'running', 'dead', 'done'];

/** How an event reached the handlers: a webhook, a reconciliation, or `inbox.replay(id)`. */
export type InboxSource = 'webhook' | 'reconcile' | 'replay';

/** One event in the inbox: what the back ends store, and what `receiver.inbox.get(id)` answers. */
export interface InboxRecord {
  /**
   * The event key it was claimed under (`e:video.completed:48213`, event-key.ts): one record per event,
   * whatever delivery brought it, so `inbox.get(id)` and `inbox.replay(id)` take this.
   */
  id: string;
  /**
   * The delivery id (`X-Service-Delivery`) of the delivery that brought it, `reconcile:<event>:<clip id>`
   * for a reconciled one: the handler's `context.deliveryId`. A stored record without this field (one
   * keyed by its delivery id) takes it from `id`.
   */
  deliveryId: string;
  /** The event's name, `video.completed` or `video.failed`. */
  name: string;
  /** The exact signed body, as text: the handler's `context.rawBody`, and its event once parsed. */
  body: string;
  /** The delivery-store keys it was claimed under. */
  keys: string[];
  source: InboxSource;
  state: InboxState;
  /** Handler runs started so far; the handler's `context.attempt` is this number while it runs. */
  attempts: number;
  /** Milliseconds since the epoch, when the receiver took the request. */
  receivedAt: number;
  /** When a `pending` record is due; `null` otherwise. */
  nextAttemptAt: number | null;
  /** When it became `dead` or `done`; `null` otherwise. */
  finishedAt: number | null;
  /** The last handler failure's message; `null` when none failed (or since a replay). */
  lastError: string | null;
}

/** Counts per state, as `receiver.inbox.stats()` answers. */
export type InboxStats = Record<InboxState, number>;

export interface InboxListOptions {
  /** Only records in this state. @default every state */
  state?: InboxState;
  /** At most this many, newest first. @default 100 */
  limit?: number;
}

export interface InboxPurgeOptions {
  /** `dead` or `done`: pending and running records are never dropped. */
  state: 'dead' | 'done';
  /** Only records that finished before this time (a Date or milliseconds since the epoch). @default now */
  before?: Date | number;
}

/** What `add` found: stored, already stored under that id, or refused past `maxPending` or `maxPendingBytes`. */
export type AddOutcome = 'added' | 'exists' | 'full';

/**
 * Where records live (file or Redis). Back ends only store records and move them between states
 * atomically; the runner (runner.ts) decides what happens to them.
 */
export interface InboxBackend {
  /** Names the file or the Redis, for messages. */
  readonly where: string;
  /**
   * Loads what a previous run left. A record left `running` by a process that died had that run counted:
   * it is run again, or dead once it had `retries + 1` runs (file: here; Redis: when its lease ends).
   */
  open(): Promise<void>;
  /**
   * Stores `record` durably (resolves once it is), unless `maxPending` records are pending or running, or
   * their bodies and this one's would pass `maxPendingBytes` (UTF-8 bytes).
   */
  add(record: InboxRecord, maxPending: number, maxPendingBytes?: number): Promise<AddOutcome>;
  /**
   * Makes up to `limit` due records `running` for `owner` until `leaseUntil` (each one's `attempts` + 1):
   * pending ones whose `nextAttemptAt` has come, and running ones whose lease ended (their worker died).
   * Resolves once the new attempts are durable, so a handler that ends the process has its run counted.
   */
  claim(now: number, leaseUntil: number, owner: string, limit: number): Promise<InboxRecord[]>;
  /**
   * Moves the lease of a record `owner` is running to `leaseUntil`; `false` when it lost it. Only shared
   * back ends (Redis) have leases that end; a file is one process's.
   */
  extend?(id: string, owner: string, leaseUntil: number): Promise<boolean>;
  /** Writes the outcome of a run (`record` in its new state); `false` when `owner` had lost the lease. */
  settle(record: InboxRecord, owner: string, now: number): Promise<boolean>;
  get(id: string): Promise<InboxRecord | undefined>;
  list(state: InboxState | undefined, limit: number): Promise<InboxRecord[]>;
  /** Makes a dead or done record pending again, as `source: 'replay'` with its attempts from 0. */
  replay(id: string, now: number): Promise<InboxRecord>;
  /** Drops the `state` records that finished before `before`; answers how many. */
  purge(state: 'dead' | 'done', before: number): Promise<number>;
  stats(): Promise<InboxStats>;
  /** When the earliest pending record is due (or a running one's lease ends); `null` when none. */
  nextDue(): Promise<number | null>;
  close(): Promise<void>;
}

/** A fresh record for a first-seen event: `id` its event key, `deliveryId` the delivery that brought it (`id` when omitted). */
export function newRecord(id: string, name: string, body: string, keys: readonly string[], source: InboxSource, now: number, deliveryId = id): InboxRecord {
  return { id, deliveryId, name, body, keys: [...keys], source, state: 'pending', attempts: 0, receivedAt: now, nextAttemptAt: now, finishedAt: null, lastError: null };
}
