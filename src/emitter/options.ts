import { RETRY_SCHEDULE_MS } from '../protocol/schedule.js';
import { bullmqQueue, isBullmqQueue, type BullmqQueue } from './bullmq/options.js';
import { assertRedisUrl } from '../store/redis-url.js';
import { FileOutbox } from './file-outbox.js';
import type { Outbox } from './outbox.js';
import type { FetchFunction, Transport } from './transport.js';
import { consoleLogger, systemClock, type DeliveryRecord, type EmitterClock, type EmitterLogger } from './types.js';
import type { LookupFunction } from '../http/outbound-guard.js';

/**
 * The longest `timeoutMs`: Node's timers overflow above 2^31-1 ms and fire at once, which would time out
 * every attempt as it starts.
 */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export interface EmitterOptions {
  /**
   * Where deliveries are kept. The file outbox survives restarts; `new MemoryOutbox()` is for tests.
   * @default new FileOutbox({ file: '.cliphook/outbox.json' })
   */
  store?: Outbox;
  /**
   * Shares deliveries between processes through Redis instead of keeping them in `store`: every process
   * with the same queue takes attempts from it, and sees every delivery. Not with `store` or `redisUrl`.
   * @example createEmitter({ queue: bullmqQueue({ url: 'redis://127.0.0.1:6379' }) })
   * @default undefined (the outbox in `store`)
   */
  queue?: BullmqQueue;
  /**
   * A shortcut for `queue: bullmqQueue({ url: redisUrl })` (the CLI takes it from `CLIPHOOK_REDIS_URL`).
   * Not with `store` or `queue`. @example 'redis://127.0.0.1:6379'
   */
  redisUrl?: string;
  /**
   * Milliseconds one attempt may take, from connect to the end of the response, before it counts as a
   * timeout (retried on the schedule). At most 2147483647 (about 24.8 days), the longest timer Node keeps.
   * @default 10_000
   */
  timeoutMs?: number;
  /**
   * Attempts in flight at once, across all URLs (each destination up to `maxPerDestination` of them);
   * further due deliveries wait their turn. On Redis, per
   * process (its BullMQ worker's concurrency): two processes make up to twice as many.
   * @default 16
   */
  concurrency?: number;
  /**
   * Attempts in flight at once to one destination (a callback URL's origin: scheme, host and port), so a
   * receiver that hangs holds this many slots of `concurrency` and the others keep going; due deliveries
   * are taken in turn across destinations, one each, so a backlog for one never queues ahead of another's.
   * At least 1; above `concurrency` it is `concurrency`. On Redis, per process, like `concurrency`.
   * @default a quarter of `concurrency`, rounded up (4 with the default 16)
   */
  maxPerDestination?: number;
  /**
   * Allows plain http and callback URLs that are or resolve to loopback, private, link-local, CGNAT,
   * multicast, unspecified or cloud metadata addresses. For local development and tests only.
   * @default false
   */
  allowPrivateNetworks?: boolean;
  /**
   * Milliseconds to wait after each failed attempt; one attempt more than there are slots. Spec 6.4 fixes
   * 30 s, 2 min, 10 min, 30 min, 2 h; change it only for tests of your own.
   * @default RETRY_SCHEDULE_MS
   */
  retrySchedule?: readonly number[];
  /**
   * Delivered and failed deliveries kept for `get`, `list` and `redeliver`; the oldest are forgotten first.
   * On Redis the count is for the whole queue: give every process the same value.
   * @default 1000
   */
  retainFinished?: number;
  /**
   * The time source and timers. Tests pass a fake to walk the schedule. On Redis, BullMQ waits out each
   * retry in real time; a clock of your own also brings a retry forward once it reaches `nextAttemptAt`.
   * @default the system clock
   */
  clock?: EmitterClock;
  /**
   * Where failed writes of the outbox, throwing listeners and (on Redis) a lost and regained connection are
   * reported. @default console (warn, error)
   */
  logger?: EmitterLogger;
  /**
   * Sends the requests through this `fetch` instead of the built-in `node:http` client. The URL checks
   * still apply, but the connect-time address check is then the fetch's own business.
   * @default undefined (the built-in client, which checks every resolved address)
   */
  fetch?: FetchFunction;
  /** The DNS lookup behind the built-in client's connect-time check. @default dns.lookup */
  lookup?: LookupFunction;
  /**
   * Wraps the transport the attempts send through (the built-in client, or the one over `fetch`): called
   * once with it when the attempts are set up, and what it returns makes every request. The URL checks
   * run before it and the connect-time address check stays inside `next`, so a wrapper that calls `next`
   * keeps both. It may change a request (re-sign a changed body: `sign` from cliphook), send it more than
   * once or answer without sending; what it resolves to is the attempt's reply, a rejection a failed
   * connection. For fault injection and instrumentation (the local service's webhook chaos is one).
   * @example createEmitter({ wrapTransport: (next) => async (request) => { const reply = await next(request); seen.push(reply.status); return reply; } })
   * @default undefined (the transport as it is)
   */
  wrapTransport?: (next: Transport) => Transport;
  /**
   * The time of each attempt in ms since the epoch, `undefined` for the clock's: the body's `delivered_at`
   * (signed with it) and the attempt's `at`. Called as each attempt begins, with the delivery's stored
   * record (its `attempts` are the earlier ones; it holds the secret: do not keep or log it). Timeouts and
   * the retry schedule still run on `clock`. A hook that throws or returns something else fails that
   * attempt (retried on the schedule). The local service gives each account its own time this way.
   * @example createEmitter({ deliveredAt: (record) => accountClock(record.id) })
   * @default undefined (the clock's `now()`)
   */
  deliveredAt?: (record: Readonly<DeliveryRecord>) => number | undefined;
}

/** The checked options every backend uses. */
export interface ResolvedCommonOptions {
  timeoutMs: number;
  concurrency: number;
  maxPerDestination: number;
  allowPrivateNetworks: boolean;
  retrySchedule: readonly number[];
  retainFinished: number;
  clock: EmitterClock;
  logger: EmitterLogger;
  fetch: FetchFunction | undefined;
  lookup: LookupFunction | undefined;
  wrapTransport: ((next: Transport) => Transport) | undefined;
  deliveredAt: ((record: Readonly<DeliveryRecord>) => number | undefined) | undefined;
}

/** The checked options of an emitter on an outbox. */
export interface ResolvedEmitterOptions extends ResolvedCommonOptions {
  store: Outbox;
}

/** The checked options of an emitter on a BullMQ queue. */
export interface ResolvedQueueOptions extends ResolvedCommonOptions {
  queue: BullmqQueue;
}

/** Applies the defaults and checks every option, so a misconfiguration fails at start-up. */
export function resolveEmitterOptions(options: EmitterOptions = {}): ResolvedEmitterOptions | ResolvedQueueOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError(`Expected an options object, got ${String(options)}.`);
  const {
    store: givenStore,
    queue,
    redisUrl,
    timeoutMs = 10_000,
    concurrency = 16,
    maxPerDestination,
    allowPrivateNetworks = false,
    retrySchedule = RETRY_SCHEDULE_MS,
    retainFinished = 1000,
    clock = systemClock,
    logger = consoleLogger,
    fetch,
    lookup,
    wrapTransport,
    deliveredAt,
  } = options;
  if (givenStore !== undefined) {
    for (const method of ['load', 'save', 'delete', 'close'] as const) {
      if (typeof (givenStore as Partial<Outbox>)?.[method] !== 'function') {
        throw new TypeError(`Expected \`store\` to be an outbox with a \`${method}()\` method.`);
      }
    }
  }
  if ([givenStore, queue, redisUrl].filter((given) => given !== undefined).length > 1) {
    throw new TypeError('Expected one of `store`, `queue` and `redisUrl`: an emitter keeps its deliveries in one place.');
  }
  if (queue !== undefined && !isBullmqQueue(queue)) throw new TypeError('Expected `queue` to be made by bullmqQueue({ url | connection, … }).');
  if (redisUrl !== undefined) assertRedisUrl(redisUrl, 'redisUrl');
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new TypeError(`Expected \`timeoutMs\` to be a positive number of milliseconds up to ${MAX_TIMEOUT_MS}, got ${timeoutMs}.`);
  }
  if (!(Number.isSafeInteger(concurrency) && concurrency >= 1)) throw new TypeError(`Expected \`concurrency\` to be a positive integer, got ${concurrency}.`);
  if (maxPerDestination !== undefined && !(Number.isSafeInteger(maxPerDestination) && maxPerDestination >= 1)) {
    throw new TypeError(`Expected \`maxPerDestination\` to be a positive integer, got ${JSON.stringify(maxPerDestination)}.`);
  }
  if (typeof allowPrivateNetworks !== 'boolean') throw new TypeError(`Expected \`allowPrivateNetworks\` to be a boolean, got ${JSON.stringify(allowPrivateNetworks)}.`);
  if (!Array.isArray(retrySchedule) || !retrySchedule.every((ms) => Number.isFinite(ms) && ms >= 0)) {
    throw new TypeError(`Expected \`retrySchedule\` to be an array of non-negative milliseconds, got ${JSON.stringify(retrySchedule)}.`);
  }
  if (!(Number.isSafeInteger(retainFinished) && retainFinished >= 0)) {
    throw new TypeError(`Expected \`retainFinished\` to be a non-negative integer, got ${retainFinished}.`);
  }
  for (const method of ['now', 'setTimeout', 'clearTimeout'] as const) {
    if (typeof (clock as Partial<EmitterClock>)?.[method] !== 'function') throw new TypeError(`Expected \`clock\` to have a \`${method}()\` function.`);
  }
  for (const method of ['info', 'warn', 'error'] as const) {
    if (typeof (logger as Partial<EmitterLogger>)?.[method] !== 'function') throw new TypeError(`Expected \`logger\` to have a \`${method}()\` function.`);
  }
  if (fetch !== undefined && typeof fetch !== 'function') throw new TypeError(`Expected \`fetch\` to be a function, got ${typeof fetch}.`);
  if (lookup !== undefined && typeof lookup !== 'function') throw new TypeError(`Expected \`lookup\` to be a function, got ${typeof lookup}.`);
  if (wrapTransport !== undefined && typeof wrapTransport !== 'function') throw new TypeError(`Expected \`wrapTransport\` to be a function, got ${typeof wrapTransport}.`);
  if (deliveredAt !== undefined && typeof deliveredAt !== 'function') throw new TypeError(`Expected \`deliveredAt\` to be a function, got ${typeof deliveredAt}.`);
  const perDestination = Math.min(maxPerDestination ?? Math.ceil(concurrency / 4), concurrency);
  const common = { timeoutMs, concurrency, maxPerDestination: perDestination, allowPrivateNetworks, retrySchedule: Object.freeze([...retrySchedule]), retainFinished, clock, logger, fetch, lookup, wrapTransport, deliveredAt };
  if (queue !== undefined) return { ...common, queue };
  if (redisUrl !== undefined) return { ...common, queue: bullmqQueue({ url: redisUrl }) };
  // Last, once nothing can throw: the default outbox holds its file from construction, and one left
  // open by a refused option would refuse every later createEmitter() in this process.
  return { ...common, store: givenStore ?? new FileOutbox() };
}
