import type { ConnectionOptions } from 'node:tls';

// The published declarations name only our own and Node's types, so no release of ioredis can break an app's
// type-check through ours. A Redis a user hands to a part of cliphook is typed by what that part does with it,
// written out here; an ioredis client and ioredis's options satisfy each (test/store/redis-client.test.ts
// checks it at compile time against the ioredis installed, and test/package.test.ts against the newest).

/** The TLS profiles ioredis ships by name (6.1 and later): its certificates for Redis Cloud. */
export type RedisTlsProfile = 'RedisCloudFixed' | 'RedisCloudFlexible';

/**
 * Where a Redis is and how to reach it: the ioredis options cliphook passes on when it opens its own
 * connections (`bullmqQueue({ connection })`). Each has ioredis's meaning and default. Options that would
 * change how cliphook's own connections behave (`lazyConnect`, `enableOfflineQueue`, `keyPrefix`) are not
 * taken: cliphook sets them (`maxRetriesPerRequest` is taken and overridden). Any other ioredis option given
 * at run time still reaches ioredis; only the ones here are typed.
 * @example { host: 'redis.internal', port: 6380, password: process.env.REDIS_PASSWORD, tls: {} }
 */
export interface RedisClientOptions {
  /** @default 'localhost' */
  host?: string | undefined;
  /** @default 6379 */
  port?: number | undefined;
  /** A Unix socket instead of `host` and `port`. */
  path?: string | undefined;
  /** 4 or 6 to resolve `host` to IPv4 or IPv6 only. @default 0 (either) */
  family?: number | undefined;
  /** For Redis 6 ACLs (`AUTH username password`). */
  username?: string | undefined;
  password?: string | undefined;
  /** @default 0 */
  db?: number | undefined;
  /**
   * TLS (`rediss://`): Node's `tls.connect` options (`{}` for a server with a public certificate), or the
   * name of a TLS profile ioredis ships (`'RedisCloudFixed'`, `'RedisCloudFlexible'` since ioredis 6.1).
   */
  tls?: ConnectionOptions | RedisTlsProfile | undefined;
  /** Milliseconds to wait for the connection before it fails. @default 10_000 */
  connectTimeout?: number | undefined;
  /** Milliseconds a command may wait for its reply before it fails. @default no limit */
  commandTimeout?: number | undefined;
  /** Milliseconds of silence after which the socket is considered dead. @default no limit */
  socketTimeout?: number | undefined;
  /** TCP keep-alive's initial delay in milliseconds. @default 30_000 */
  keepAlive?: number | undefined;
  /** @default true */
  noDelay?: boolean | undefined;
  /** The name the connections show in `CLIENT LIST`. */
  connectionName?: string | undefined;
  /** Milliseconds before reconnection attempt `times`, or no number to stop trying. @default ioredis's exponential back-off (at most 5 s apart) */
  retryStrategy?: ((times: number) => number | void | null) | null | undefined;
  /** Waits for Redis to have loaded its data before the connection counts as ready. @default true */
  enableReadyCheck?: boolean | undefined;
  /** Whether to reconnect (and resend, with 2) on a reply error such as `READONLY` after a failover. */
  reconnectOnError?: ((error: Error) => boolean | 1 | 2) | null | undefined;
  /** Sends the commands of one event loop turn as one pipeline. @default false */
  enableAutoPipelining?: boolean | undefined;
  /** Redis Sentinel: the sentinels to ask where the master `name` is (then `host` and `port` are not used). */
  sentinels?: Array<{ host?: string; port?: number; family?: number }> | undefined;
  /** Redis Sentinel: the master group's name. */
  name?: string | undefined;
  /** Redis Sentinel: connect to the master or a replica. @default 'master' */
  role?: 'master' | 'slave' | undefined;
  sentinelUsername?: string | undefined;
  sentinelPassword?: string | undefined;
  /** Redis Sentinel: TLS to the sentinels too (with `sentinelTLS`). @default false */
  enableTLSForSentinelMode?: boolean | undefined;
  sentinelTLS?: ConnectionOptions | undefined;
  /**
   * Taken so an ioredis configuration (BullMQ's docs ask for `null`) can be passed as it is; cliphook's own
   * connections set it themselves (`null`), so a value here changes nothing.
   */
  maxRetriesPerRequest?: number | null | undefined;
}

/** What cliphook overrides when it duplicates a client: how its own connections queue and retry. */
export interface RedisDuplicateOptions {
  lazyConnect?: boolean | undefined;
  maxRetriesPerRequest?: number | null | undefined;
  enableOfflineQueue?: boolean | undefined;
}

/**
 * A Redis client cliphook makes its own connections from, with the caller's settings, by `duplicate()`,
 * and leaves open (an ioredis `Redis`; BullMQ runs on ioredis, so the emitter needs one). It reads
 * `options` for log lines (host and port, never the password) and to refuse a `keyPrefix`.
 */
export interface RedisClientLike {
  readonly options: {
    readonly host?: string | undefined;
    readonly port?: number | undefined;
    readonly path?: string | undefined;
    readonly keyPrefix?: string | undefined;
  };
  duplicate(override?: RedisDuplicateOptions): RedisClientLike;
}
