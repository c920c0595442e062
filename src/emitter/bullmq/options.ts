import type { RedisClientLike, RedisClientOptions } from '../../store/redis-client.js';
import { assertRedisUrl } from '../../store/redis-url.js';

export interface BullmqQueueOptions {
  /**
   * Redis to connect to, as a `redis://` or `rediss://` URL; the emitter makes its own connections.
   * Give this or `connection`. @example 'redis://127.0.0.1:6379'
   */
  url?: string;
  /**
   * Redis to connect to, as a client (an ioredis `Redis`: the emitter duplicates it and never closes
   * yours, and refuses one with a `keyPrefix`: use `prefix`) or as `RedisClientOptions` (host, port,
   * password, tls…). Give this or `url`.
   * @example { host: 'redis.internal', port: 6379, password: process.env.REDIS_PASSWORD }
   */
  connection?: RedisClientLike | RedisClientOptions;
  /** Prefix of every Redis key the emitter writes (BullMQ's and the delivery records). @default 'cliphook' */
  prefix?: string;
  /** The queue's name, without `:`. Processes with the same `prefix` and `name` share deliveries. @default 'webhooks' */
  name?: string;
  /**
   * Milliseconds a worker's lock on an attempt lasts; it renews it at half that while the attempt runs. A
   * worker that dies mid-attempt (SIGKILL, a lost machine) is noticed once its lock expires, and the
   * attempt is made again by another. Keep it above the time a busy event loop may block.
   * @default 30_000
   */
  lockDurationMs?: number;
  /** Milliseconds between two checks, by each worker, for attempts whose lock expired. @default 30_000 */
  stalledIntervalMs?: number;
  /**
   * `false`: this process makes no attempts. It still sees every delivery (`get`, `list`), and `send` and
   * `redeliver` queue them for the processes that do: for dashboards and `cliphook deliveries --redis`.
   * @default true
   */
  worker?: boolean;
}

/** A checked `bullmqQueue()` configuration: connects nothing until the emitter starts. */
export interface BullmqQueue {
  readonly kind: 'bullmq';
  readonly url: string | undefined;
  readonly connection: RedisClientLike | RedisClientOptions | undefined;
  readonly prefix: string;
  readonly name: string;
  readonly lockDurationMs: number;
  readonly stalledIntervalMs: number;
  readonly worker: boolean;
  /** Where Redis is, for log lines: host and port, never the password. */
  readonly where: string;
}

const made = new WeakSet<object>();

/**
 * Where an emitter keeps its deliveries when several processes share the work: a BullMQ queue on Redis.
 * Every process that creates an emitter with the same Redis, `prefix` and `name` takes attempts from the
 * queue (`concurrency` at a time), and sees every delivery in `get()` and `list()`. Checks the options now
 * (a `TypeError` names the bad one); connects when the emitter starts.
 * @example
 * const emitter = createEmitter({ queue: bullmqQueue({ url: process.env.REDIS_URL, name: 'webhooks' }) });
 * await emitter.start();
 */
export function bullmqQueue(options: BullmqQueueOptions): BullmqQueue {
  if (typeof options !== 'object' || options === null) throw new TypeError(`Expected bullmqQueue() to get an options object, got ${String(options)}.`);
  const { url, connection, prefix = 'cliphook', name = 'webhooks', lockDurationMs = 30_000, stalledIntervalMs = 30_000, worker = true } = options;
  if (typeof worker !== 'boolean') throw new TypeError(`Expected \`worker\` to be a boolean, got ${JSON.stringify(worker)}.`);
  if ((url === undefined) === (connection === undefined)) throw new TypeError('Expected either `url` (redis://…) or `connection` (an ioredis client or options), and not both.');
  if (url !== undefined) assertRedisUrl(url, 'url');
  if (connection !== undefined) {
    if (typeof connection !== 'object' || connection === null) throw new TypeError(`Expected \`connection\` to be an ioredis client or ioredis options, got ${String(connection)}.`);
    // ioredis options given as a variable of ioredis's own type may still carry one.
    const keyPrefix = isClient(connection) ? connection.options.keyPrefix : (connection as { keyPrefix?: unknown }).keyPrefix;
    if (keyPrefix) throw new TypeError(`Expected \`connection\` without \`keyPrefix\` (${JSON.stringify(keyPrefix)}): BullMQ refuses it; use \`prefix\`.`);
  }
  if (typeof prefix !== 'string' || prefix === '') throw new TypeError(`Expected \`prefix\` to be a non-empty string, got ${JSON.stringify(prefix)}.`);
  if (typeof name !== 'string' || name === '' || name.includes(':')) throw new TypeError(`Expected \`name\` to be a non-empty string without ":", got ${JSON.stringify(name)}.`);
  for (const [option, value] of [['lockDurationMs', lockDurationMs], ['stalledIntervalMs', stalledIntervalMs]] as const) {
    if (!(Number.isSafeInteger(value) && value > 0)) throw new TypeError(`Expected \`${option}\` to be a positive whole number of milliseconds, got ${value}.`);
  }
  const queue: BullmqQueue = Object.freeze({ kind: 'bullmq', url, connection, prefix, name, lockDurationMs, stalledIntervalMs, worker, where: describe(url, connection) });
  made.add(queue);
  return queue;
}

/** Whether `value` came from `bullmqQueue()`. */
export function isBullmqQueue(value: unknown): value is BullmqQueue {
  return typeof value === 'object' && value !== null && made.has(value);
}

/** Whether `connection` is a client to duplicate rather than options to connect with. */
export function isClient(connection: RedisClientLike | RedisClientOptions): connection is RedisClientLike {
  return typeof (connection as Partial<RedisClientLike>).duplicate === 'function';
}

function describe(url: string | undefined, connection: RedisClientLike | RedisClientOptions | undefined): string {
  if (url !== undefined) {
    const { protocol, hostname, port } = new URL(url);
    return `${protocol}//${hostname}:${port || 6379}`;
  }
  const options = connection && isClient(connection) ? connection.options : (connection as RedisClientOptions);
  if (options.path) return `redis+unix://${options.path}`;
  return `redis://${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}
