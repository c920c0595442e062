import { createHash } from 'node:crypto';
import type { RedisClientLike } from '../../../store/redis-client.js';

/** The part of an ioredis client the service's shared records use. */
export interface ServiceRedis {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
}

/**
 * A connected ioredis client as the service takes it (`redis`): Lua scripts for the shared rate limits and
 * idempotency records, and a `duplicate()` for the BullMQ queue of its webhooks. Written
 * out, so the published types name no ioredis; an ioredis `Redis` fits.
 */
export interface ServiceRedisClient extends ServiceRedis, RedisClientLike {}

const shas = new Map<string, string>();

/** Runs a Lua script by its SHA-1, sending the text only when Redis has not cached it yet (NOSCRIPT). */
export async function runScript(redis: ServiceRedis, script: string, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  let sha = shas.get(script);
  if (sha === undefined) shas.set(script, (sha = createHash('sha1').update(script).digest('hex')));
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
    return redis.eval(script, keys.length, ...keys, ...args);
  }
}

/**
 * How the service names an API key in Redis: the hash of its token. Each process numbers its own accounts
 * and `key_…` ids, so only the token is the same key wherever a request lands; Redis never sees it.
 */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}
