import { isRedisUrl, redactRedisUrl } from '../store/redis-url.js';
import { ExitError } from './errors.js';

/**
 * Connects once to the Redis of `flag` and says in one line why it cannot be used: its URL without the
 * password, and the cause as the socket or Redis gave it (`connect ECONNREFUSED 127.0.0.1:6379`,
 * `WRONGPASS …`). Each command that takes `--redis` asks this first, so an unreachable Redis is reported
 * the same way everywhere rather than as what the client library says after its retries ("Reached the max
 * retries per request limit"). A value that is not a redis:// URL is left to the command's own check.
 * @example await reachRedis(options.redis, '--redis');
 */
export async function reachRedis(url: string, flag: string, connectTimeoutMs = 5_000): Promise<void> {
  if (!isRedisUrl(url)) return;
  const { Redis } = await import('ioredis');
  let cause: Error | undefined;
  // One try, no reconnection, no queueing: the answer is whether Redis can be used now.
  const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: connectTimeoutMs });
  // The first error the connection reports is the cause; what connect() rejects with after it is a consequence.
  client.on('error', (error: Error) => void (cause ??= error));
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new ExitError(`cannot reach Redis at ${redactRedisUrl(url)} (${flag}): ${(cause ?? (error as Error)).message}`, 1);
  } finally {
    client.disconnect();
  }
}
