import { IDEMPOTENCY_WINDOW_MS } from '../idempotency.js';
import { RATE_WINDOW_MS } from '../gate.js';
import type { ServiceRedis, ServiceRedisClient } from './client.js';
import { RedisIdempotency } from './idempotency.js';
import { RedisRateLimiter } from './rate-limit.js';
import { assertRedisUrl, redactRedisUrl } from '../../../store/redis-url.js';

export interface SharedOptions {
  /** A connected ioredis client, which the service does not close… */
  redis?: ServiceRedisClient;
  /** …or a `redis://` URL for a client of the service's own. */
  redisUrl?: string;
  /** Prefix of every key. @default 'cliphook:service:' */
  redisPrefix?: string;
}

/** What `serve` processes on one Redis share: the rate-limit windows and the idempotency records. */
export interface SharedRecords {
  redis: ServiceRedis;
  limiter: RedisRateLimiter;
  idempotency: RedisIdempotency;
  close(): Promise<void>;
}

/** Checks the Redis options; `undefined` when none is given. Throws a TypeError naming a bad one. */
export function sharedOptions({ redis, redisUrl, redisPrefix = 'cliphook:service:', emitter }: SharedOptions & { emitter?: unknown }): { redis?: ServiceRedisClient; redisUrl?: string; prefix: string } | undefined {
  if (redis !== undefined && redisUrl !== undefined) throw new TypeError('Expected either `redis` (an ioredis client) or `redisUrl`, not both.');
  if (redis !== undefined) {
    // What the service calls: the scripts of the shared records, and duplicate() for the webhooks' BullMQ queue
    // when no emitter is given (without it, bullmqQueue would take the object for connection options).
    const missing = (['eval', 'evalsha', 'del', ...(emitter === undefined ? ['duplicate' as const] : [])] as const).filter((name) => typeof (redis as Partial<ServiceRedisClient> | null)?.[name] !== 'function');
    if (missing.length > 0) throw new TypeError(`Expected \`redis\` to be an ioredis client (it has no ${missing.map((name) => `${name}()`).join(', ')}).`);
  }
  if (redisUrl !== undefined) assertRedisUrl(redisUrl, 'redisUrl');
  if (typeof redisPrefix !== 'string') throw new TypeError('Expected `redisPrefix` to be a string.');
  if (redis === undefined && redisUrl === undefined) return undefined;
  return { ...(redis === undefined ? {} : { redis }), ...(redisUrl === undefined ? {} : { redisUrl }), prefix: redisPrefix };
}

/**
 * Connects (for a URL; ioredis is loaded only then) and makes the shared records. A Redis that does not
 * answer within `connectTimeoutMs` fails the start, rather than a first request.
 */
export async function openShared(options: { redis?: ServiceRedisClient; redisUrl?: string; prefix: string }, { now, limit, connectTimeoutMs = 5_000 }: { now: () => number; limit: number; connectTimeoutMs?: number }): Promise<SharedRecords> {
  let client: ServiceRedis | undefined = options.redis;
  let quit: (() => Promise<void>) | null = null;
  if (!client) {
    const { Redis } = await import('ioredis');
    // While Redis is away a command fails after one reconnection attempt (the request gets a 503)
    // instead of waiting through ioredis's default 20.
    // A command unanswered for 5 s (a half-open connection) fails, and one in flight when the connection
    // dropped is not sent again after it (a BEGIN sent twice would find its own record and answer 409).
    const own = new Redis(options.redisUrl!, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      commandTimeout: 5_000,
      autoResendUnfulfilledCommands: false,
      connectTimeout: connectTimeoutMs,
      retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000),
    });
    own.on('error', () => undefined);
    try {
      await own.connect();
    } catch (error) {
      own.disconnect();
      throw new Error(`cannot reach Redis at ${redactRedisUrl(options.redisUrl!)}: ${(error as Error).message}`, { cause: error });
    }
    client = own;
    quit = async () => void (await own.quit().catch(() => own.disconnect()));
  }
  return {
    redis: client,
    limiter: new RedisRateLimiter({ redis: client, prefix: options.prefix, now, limit, windowMs: RATE_WINDOW_MS }),
    idempotency: new RedisIdempotency({ redis: client, prefix: options.prefix, now, windowMs: IDEMPOTENCY_WINDOW_MS }),
    close: async () => {
      await quit?.();
    },
  };
}
