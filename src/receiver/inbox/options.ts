// The inbox's options, their defaults, and their checks at construction. No Node module.
import type { RedisLike } from '../redis-delivery-store.js';
import { HOST_TIMERS, MAX_TIMER_MS } from '../host-timers.js';
import { parseLimit } from '../limit.js';
import { checkBackoff, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import type { InboxRecord } from './record.js';

/** The timers the inbox waits with: Node's by default; a `SimulatedClock` (cliphook/service) in tests. */
export interface InboxTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * `createReceiver({ inbox })`: `true` for an inbox beside the delivery store (a file beside a file store, memory
 * beside a `MemoryDeliveryStore`), or these.
 */
export interface InboxOptions {
  /**
   * The inbox file (its journal `<file>.journal`, its lock `<file>.lock`): one process at a time.
   * @default 'inbox.json' in the delivery store's folder ('.cliphook/inbox.json'); memory beside a `MemoryDeliveryStore`
   */
  file?: string;
  /**
   * Tests: keep the inbox in memory and write nothing, whatever the delivery store. It lives as long as the
   * delivery store object (a receiver made again on that store finds its events), so a test file's inbox
   * is gone with its receiver and store, and test files run in parallel never share one. Already the
   * default beside a `MemoryDeliveryStore`; not with `file`, `redis` or `fsync`.
   * @default false (true beside a MemoryDeliveryStore)
   */
  memory?: boolean;
  /** A `redis://` URL or a connected ioredis client: one inbox shared by several processes, each event run by one. */
  redis?: string | RedisLike;
  /** Redis only: prefix of every key. @default 'cliphook:inbox:' */
  prefix?: string;
  /** File only: `fdatasync` each group commit before answering, so a 2xx survives a power cut. @default false */
  fsync?: boolean;
  /** Handlers running at once, in each process of the app. @default 4 */
  concurrency?: number;
  /** Retries after a handler's first failure; then the event is dead (kept, replayable). @default 5 */
  retries?: number;
  /** Milliseconds before the first retry. @default 1000 */
  minTimeout?: number;
  /** The longest wait between two runs, in milliseconds. @default 60_000 */
  maxTimeout?: number;
  /** Each wait is the one before times this. @default 2 */
  factor?: number;
  /** Events pending or running at most; past it a webhook is answered 503 `inbox_full` with Retry-After. @default 10_000 */
  maxPending?: number;
  /**
   * The bodies of the events pending or running, in bytes at most (a number or
   * a size like '64mb'); past it a webhook is answered 503 `inbox_full` with Retry-After, as past
   * `maxPending`. A file inbox holds these bodies in memory, so this bounds its memory; at least the
   * receiver's `limit`, so one event always fits.
   * @default '64mb'
   */
  maxPendingBytes?: number | string;
  /** Done events kept for inspection at most (the oldest go first). @default 1000 */
  keepDone?: number;
  /** Done events kept at most this long, in milliseconds. @default 86_400_000 (24 h) */
  keepDoneMs?: number;
  /**
   * Dead events kept at most (the oldest go first, each told to `onDeadDropped`); a file inbox holds
   * their bodies in memory, so this bounds what failed events can take. @default 1000
   */
  keepDead?: number;
  /** Dead events kept at most this long, in milliseconds. @default 2_592_000_000 (30 days) */
  keepDeadMs?: number;
  /**
   * Told of each dead event `keepDead` or `keepDeadMs` drops, with its record (body included),
   * to log or keep elsewhere. Pending and running events are never dropped.
   * @default a Node warning (`CLIPHOOK_INBOX_DEAD_DROPPED`) naming the event
   */
  onDeadDropped?: (record: InboxRecord) => void;
  /**
   * How long `receiver.close()` waits for running handlers, in milliseconds; then it aborts their
   * `context.signal` and returns, and their events run again at the next start. @default 10_000
   */
  closeTimeout?: number;
  /**
   * A handler's deadline, in milliseconds: a run still going then has its `context.signal` aborted (reason a
   * `HandlerTimeoutError`), counts as a failed attempt (`onError` hears `handler_timeout`; retried with backoff,
   * dead past `retries`) and frees its slot at once, though its promise may never settle; a late settlement
   * changes nothing. Five minutes is far above what a webhook handler needs (a download and a few writes take
   * seconds), so only a hung one reaches it, and `concurrency` hung handlers stop the inbox for minutes, not
   * until a restart. Raise it for handlers that do long work in line; at most 2_147_483_647 (a timer's limit).
   * @default 300_000 (5 minutes)
   */
  handlerTimeout?: number;
  /** Redis only: how often to look for events other processes queued or left stalled, in milliseconds. @default 1000 */
  pollMs?: number;
  /** The timers retries and polls wait on; the time itself is the receiver's `clock`. @default Node's setTimeout */
  timers?: InboxTimers;
}

export interface ResolvedInboxOptions {
  file: string | undefined;
  memory: boolean;
  redis: string | RedisLike | undefined;
  prefix: string;
  fsync: boolean;
  concurrency: number;
  backoff: BackoffOptions;
  maxPending: number;
  maxPendingBytes: number;
  keepDone: number;
  keepDoneMs: number;
  keepDead: number;
  keepDeadMs: number;
  onDeadDropped: ((record: InboxRecord) => void) | undefined;
  closeTimeout: number;
  handlerTimeout: number;
  pollMs: number;
  timers: InboxTimers;
}

/** A handler's deadline in the inbox (`handlerTimeout`): 5 minutes. */
export const DEFAULT_HANDLER_TIMEOUT = 5 * 60_000;

/** 64 MiB of bodies waiting by default, not `maxPending` × `limit` (2.5 GB). */
export const DEFAULT_MAX_PENDING_BYTES = 64 * 1024 * 1024;

const positiveInteger = (name: string, value: number) => {
  if (!(Number.isSafeInteger(value) && value > 0)) throw new TypeError(`Expected \`inbox.${name}\` to be a positive integer, got ${value}.`);
};
const nonNegative = (name: string, value: number) => {
  if (!(Number.isFinite(value) && value >= 0)) throw new TypeError(`Expected \`inbox.${name}\` to be a non-negative number, got ${value}.`);
};

/** Checks `inbox` once, at construction: a misconfiguration fails at start-up, never at the first webhook. */
export function resolveInboxOptions(inbox: true | InboxOptions): ResolvedInboxOptions {
  if (inbox !== true && (typeof inbox !== 'object' || inbox === null)) throw new TypeError(`Expected \`inbox\` to be true or an options object, got ${String(inbox)}.`);
  const {
    file,
    memory = false,
    redis,
    prefix = 'cliphook:inbox:',
    fsync,
    concurrency = 4,
    retries = DEFAULT_BACKOFF.retries,
    minTimeout = DEFAULT_BACKOFF.minTimeout,
    maxTimeout = DEFAULT_BACKOFF.maxTimeout,
    factor = DEFAULT_BACKOFF.factor,
    maxPending = 10_000,
    maxPendingBytes = DEFAULT_MAX_PENDING_BYTES,
    keepDone = 1000,
    keepDoneMs = 86_400_000,
    keepDead = 1000,
    keepDeadMs = 2_592_000_000,
    onDeadDropped,
    closeTimeout = 10_000,
    handlerTimeout = DEFAULT_HANDLER_TIMEOUT,
    pollMs = 1000,
    timers = HOST_TIMERS,
  }: InboxOptions = inbox === true ? {} : inbox;
  if (file !== undefined && redis !== undefined) throw new TypeError('Expected `inbox.file` or `inbox.redis`, not both.');
  if (typeof memory !== 'boolean') throw new TypeError(`Expected \`inbox.memory\` to be a boolean, got ${JSON.stringify(memory)}.`);
  if (memory && (file !== undefined || redis !== undefined || fsync !== undefined)) {
    throw new TypeError('Expected `inbox.memory` alone: a memory inbox has no `file`, `redis` or `fsync`.');
  }
  if (fsync !== undefined && typeof fsync !== 'boolean') throw new TypeError(`Expected \`inbox.fsync\` to be a boolean, got ${JSON.stringify(fsync)}.`);
  if (file !== undefined && (typeof file !== 'string' || file.length === 0)) throw new TypeError(`Expected \`inbox.file\` to be a non-empty path, got ${JSON.stringify(file)}.`);
  if (redis !== undefined && typeof redis !== 'string' && typeof (redis as RedisLike)?.eval !== 'function') {
    throw new TypeError('Expected `inbox.redis` to be a redis:// URL or an ioredis client (it has no eval()).');
  }
  if (typeof prefix !== 'string') throw new TypeError('Expected `inbox.prefix` to be a string.');
  positiveInteger('concurrency', concurrency);
  positiveInteger('maxPending', maxPending);
  const pendingBytes = parseLimit(maxPendingBytes, 'inbox.maxPendingBytes');
  if (!(Number.isSafeInteger(keepDone) && keepDone >= 0)) throw new TypeError(`Expected \`inbox.keepDone\` to be a non-negative integer, got ${keepDone}.`);
  nonNegative('keepDoneMs', keepDoneMs);
  if (!(Number.isSafeInteger(keepDead) && keepDead >= 0)) throw new TypeError(`Expected \`inbox.keepDead\` to be a non-negative integer, got ${keepDead}.`);
  nonNegative('keepDeadMs', keepDeadMs);
  if (onDeadDropped !== undefined && typeof onDeadDropped !== 'function') throw new TypeError('Expected `inbox.onDeadDropped` to be a function (record) => void.');
  nonNegative('closeTimeout', closeTimeout);
  if (!(Number.isFinite(handlerTimeout) && handlerTimeout > 0 && handlerTimeout <= MAX_TIMER_MS)) {
    throw new TypeError(`Expected \`inbox.handlerTimeout\` to be a positive number of milliseconds up to ${MAX_TIMER_MS}, got ${handlerTimeout}.`);
  }
  if (!(Number.isFinite(pollMs) && pollMs > 0)) throw new TypeError(`Expected \`inbox.pollMs\` to be a positive number, got ${pollMs}.`);
  if (typeof timers?.setTimeout !== 'function' || typeof timers.clearTimeout !== 'function') {
    throw new TypeError('Expected `inbox.timers` to have setTimeout(callback, ms) and clearTimeout(handle).');
  }
  const backoff = checkBackoff({ retries, minTimeout, maxTimeout, factor });
  return { file, memory, redis, prefix, fsync: fsync ?? false, concurrency, backoff, maxPending, maxPendingBytes: pendingBytes, keepDone, keepDoneMs, keepDead, keepDeadMs, onDeadDropped, closeTimeout, handlerTimeout, pollMs, timers };
}
