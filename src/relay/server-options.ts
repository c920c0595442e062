import type { RedisDuplicateOptions } from '../store/redis-client.js';
import type { LineFileIo } from '../store/line-file-io.js';
import { realScheduler, type Scheduler } from './heartbeat.js';
import { fn, httpUrl, nonEmptyString, positiveInteger } from './validate.js';
import { assertRedisUrl } from '../store/redis-url.js';

/** Where the relay reports what happens; `console` fits. */
export interface RelayLogger {
  info(message: string): void;
  warn(message: string): void;
}

/**
 * The part of a connected ioredis client (`Redis`) the relay calls: scripts and a few commands on it, and
 * pub/sub on one `duplicate()` of it. Written out so the published types name no ioredis.
 */
export interface RelayRedis {
  readonly options: { readonly host?: string | undefined; readonly port?: number | undefined };
  /** `'ready'` when commands can run; anything else fails them at once with `relay_unavailable`. */
  readonly status: string;
  duplicate(override?: RedisDuplicateOptions): RelayRedis;
  connect(): Promise<void>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
  callBuffer(command: string, args: Array<string | number | Buffer>): Promise<unknown>;
  script(subcommand: 'LOAD', script: string): Promise<unknown>;
  hget(key: string, field: string): Promise<string | null>;
  exists(...keys: string[]): Promise<number>;
  publish(channel: string, message: string | Buffer): Promise<number>;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
}

export interface RelayServerOptions {
  /**
   * The data file keeping channels and buffered events across restarts (a snapshot of JSON lines, plus
   * `<file>.journal` and `<file>.lock` beside it); `false` keeps them in memory. A version 1 file (one
   * JSON document) is read and rewritten in the new format. Not with `redis` or `redisUrl`.
   * @default '.cliphook/relay.json'
   */
  file?: string | false;
  /**
   * A connected ioredis client (`RelayRedis` names what the relay calls on it): channels, buffers, sequence numbers, acknowledgements and listener
   * presence live in this Redis, shared by every relay process given the same Redis and `redisPrefix`, so
   * an event taken by one process reaches a listener connected to another. The relay opens one
   * more connection for pub/sub with `redis.duplicate()` and leaves this client open on `close()`.
   */
  redis?: RelayRedis;
  /** …or a `redis://` (`rediss://`) URL for clients of the relay's own, closed by `close()`. @example 'redis://127.0.0.1:6379' */
  redisUrl?: string;
  /** Prefix of every Redis key and pub/sub channel, so several relays (or apps) can share one Redis. @default 'cliphook:relay:' */
  redisPrefix?: string;
  /** The public base URL senders use, for the `url` of new channels; without it, the request's Host. @example 'https://relay.example.com' */
  publicUrl?: string;
  /** When set, `POST /channels` needs `Authorization: Bearer <adminToken>`: for a relay on a public address. */
  adminToken?: string;
  /**
   * Lets `listen()` bind an address other than loopback without `adminToken`, so anyone who reaches the
   * relay can create channels. Without it, that `listen()` rejects with a TypeError. @default false
   */
  open?: boolean;
  /** Channels the relay holds at most; past it `POST /channels` answers 507 `relay_full`. @default 1000 */
  maxChannels?: number;
  /**
   * Body bytes (as base64, as the data file keeps them) buffered across all channels; past it, once no
   * acknowledged event is left to drop, the sender gets 507 `relay_full`. Bounds memory and the data file.
   * @default 536_870_912 (512 MiB)
   */
  maxTotalBufferedBytes?: number;
  /** The data file's writes: a seam for tests that count bytes or inject a failing disk. @default node:fs */
  fileIo?: LineFileIo;
  /** Largest request body taken at `/in/…`; larger ones get 413 `body_too_large`. @default 1048576 */
  maxBodyBytes?: number;
  /** How long a sender waits for the local reply before 504 `local_timeout`; below the sender's own 10 s. @default 9000 */
  responseTimeoutMs?: number;
  /** Events kept per channel (unacknowledged ones are never dropped for room; the sender gets 507 `relay_full` instead). @default 1000 */
  maxBufferedEvents?: number;
  /** Body bytes (as base64) kept per channel, so large bodies cannot fill memory and the data file. @default 67_108_864 */
  maxBufferedBytes?: number;
  /** Events older than this are dropped from the buffer; the sender's retries end after about 3 hours. @default 86_400_000 */
  maxBufferAgeMs?: number;
  /** `Retry-After` of a 503 `no_listener` and a 507 `relay_full`, in seconds; also how often a failed data-file write is retried. @default 10 */
  retryAfterSeconds?: number;
  /** How often the relay pings each listener. @default 10_000 */
  pingIntervalMs?: number;
  /** A listener silent for longer is dropped; with the ping interval, a dead socket is noticed within 30 s. @default 20_000 */
  readDeadlineMs?: number;
  /** Milliseconds since the epoch. @default Date.now */
  clock?: () => number;
  /** Timers for pings and reply timeouts. @default real, unref'd timers */
  scheduler?: Scheduler;
  /** @default a logger that says nothing */
  logger?: RelayLogger;
}

const SILENT: RelayLogger = { info() {}, warn() {} };

/** The relay's options with their defaults applied, `publicUrl` without a trailing slash and `adminToken` as null when unset. */
export type ResolvedRelayOptions = Required<Omit<RelayServerOptions, 'publicUrl' | 'adminToken' | 'fileIo' | 'redis' | 'redisUrl' | 'redisPrefix'>> & {
  publicUrl: string | null;
  adminToken: string | null;
  fileIo: LineFileIo | undefined;
  /** Where the relay keeps its state when not in its data file. */
  redis: { client: RelayRedis | null; url: string | null; prefix: string } | null;
};

/** Applies the defaults and checks every option, so a misconfiguration fails at construction with a TypeError naming it. */
export function resolveRelayOptions({
  file: fileOption,
  redis,
  redisUrl,
  redisPrefix,
  publicUrl,
  adminToken,
  open = false,
  maxChannels = 1_000,
  maxTotalBufferedBytes = 512 * 1024 * 1024,
  fileIo,
  maxBodyBytes = 1024 * 1024,
  responseTimeoutMs = 9_000,
  maxBufferedEvents = 1_000,
  maxBufferedBytes = 64 * 1024 * 1024,
  maxBufferAgeMs = 86_400_000,
  retryAfterSeconds = 10,
  pingIntervalMs = 10_000,
  readDeadlineMs = 20_000,
  clock = Date.now,
  scheduler = realScheduler,
  logger = SILENT,
}: RelayServerOptions): ResolvedRelayOptions {
  const shared = resolveRedis({ file: fileOption, redis, redisUrl, redisPrefix, fileIo });
  const file = fileOption ?? '.cliphook/relay.json';
  if (file !== false) nonEmptyString('file', file);
  const base = publicUrl === undefined ? null : httpUrl('publicUrl', publicUrl).href.replace(/\/+$/, '');
  if (adminToken !== undefined) nonEmptyString('adminToken', adminToken);
  if (typeof open !== 'boolean') throw new TypeError(`Expected \`open\` to be a boolean, got ${JSON.stringify(open)}.`);
  positiveInteger('maxChannels', maxChannels);
  positiveInteger('maxTotalBufferedBytes', maxTotalBufferedBytes);
  if (fileIo !== undefined && (typeof fileIo !== 'object' || typeof fileIo?.append !== 'function')) throw new TypeError('Expected `fileIo` to be a LineFileIo.');
  positiveInteger('maxBodyBytes', maxBodyBytes);
  positiveInteger('responseTimeoutMs', responseTimeoutMs);
  positiveInteger('maxBufferedEvents', maxBufferedEvents);
  positiveInteger('maxBufferedBytes', maxBufferedBytes);
  positiveInteger('maxBufferAgeMs', maxBufferAgeMs);
  positiveInteger('retryAfterSeconds', retryAfterSeconds);
  positiveInteger('pingIntervalMs', pingIntervalMs);
  positiveInteger('readDeadlineMs', readDeadlineMs);
  if (readDeadlineMs <= pingIntervalMs) {
    throw new TypeError(`Expected \`readDeadlineMs\` (${readDeadlineMs}) to be above \`pingIntervalMs\` (${pingIntervalMs}), or every quiet listener is dropped.`);
  }
  fn('clock', clock);
  if (typeof scheduler?.setInterval !== 'function' || typeof scheduler.setTimeout !== 'function') throw new TypeError('Expected `scheduler` to have setInterval and setTimeout.');
  if (typeof logger?.info !== 'function' || typeof logger.warn !== 'function') throw new TypeError('Expected `logger` to have info and warn methods.');
  return {
    file, redis: shared, publicUrl: base, adminToken: adminToken ?? null,
    open, maxChannels, maxTotalBufferedBytes, fileIo, maxBodyBytes, responseTimeoutMs, maxBufferedEvents, maxBufferedBytes, maxBufferAgeMs,
    retryAfterSeconds, pingIntervalMs, readDeadlineMs, clock, scheduler, logger,
  };
}

/** The Redis options checked together: one of `redis` and `redisUrl`, and then neither `file` nor `fileIo`. */
function resolveRedis({ file, redis, redisUrl, redisPrefix, fileIo }: Pick<RelayServerOptions, 'file' | 'redis' | 'redisUrl' | 'redisPrefix' | 'fileIo'>): ResolvedRelayOptions['redis'] {
  if (redis === undefined && redisUrl === undefined) {
    if (redisPrefix !== undefined) throw new TypeError('Expected `redisPrefix` only with `redis` or `redisUrl`.');
    return null;
  }
  if (redis !== undefined && redisUrl !== undefined) throw new TypeError('Expected either `redis` (an ioredis client) or `redisUrl` (redis://…), not both.');
  if (file !== undefined) throw new TypeError('Expected either `file` or `redis`/`redisUrl`: the relay keeps its state in one of them.');
  if (fileIo !== undefined) throw new TypeError('Expected no `fileIo` with `redis`/`redisUrl`: there is no data file.');
  if (redis !== undefined && (typeof redis?.duplicate !== 'function' || typeof redis.callBuffer !== 'function')) {
    throw new TypeError('Expected `redis` to be an ioredis client (it has no duplicate() or callBuffer()).');
  }
  if (redisUrl !== undefined) assertRedisUrl(redisUrl, 'redisUrl');
  const prefix = redisPrefix ?? 'cliphook:relay:';
  nonEmptyString('redisPrefix', prefix);
  return { client: redis ?? null, url: redisUrl ?? null, prefix };
}
