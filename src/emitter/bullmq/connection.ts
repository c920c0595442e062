import type { Redis } from 'ioredis';
import type { RedisDuplicateOptions } from '../../store/redis-client.js';
import { EmitterStateError } from '../../protocol/errors.js';
import type { EmitterLogger } from '../types.js';
import { isClient, type BullmqQueue } from './options.js';

/** The emitter's two connections to Redis: commands (shared with BullMQ's queue and worker) and pub/sub. */
export interface RedisLinks {
  command: Redis;
  subscriber: Redis;
  /** Closes both; what they report afterwards is not a lost connection. */
  close(): Promise<void>;
}

// Commands wait for a reconnection rather than fail after 20 tries: a restart of Redis must not lose an
// attempt's outcome, and BullMQ needs it (its worker duplicates this connection for its blocking reads).
const OWN: RedisDuplicateOptions = { lazyConnect: true, maxRetriesPerRequest: null };

/**
 * Opens the connections, loading ioredis only now. Rejects with an `EmitterStateError`
 * (`redis_unreachable`) when the first connection fails, and closes what it opened. Afterwards a lost
 * connection is a warning on `logger`, its return an info line and a call of `onBack` (to read again
 * what changed meanwhile); ioredis keeps reconnecting (at most 2 s apart) and commands wait for it.
 */
export async function openRedis(queue: BullmqQueue, logger: EmitterLogger, onBack: () => void): Promise<RedisLinks> {
  const { Redis } = await import('ioredis');
  const { url, connection, where } = queue;
  // A client given is typed by what is called on it (RedisClientLike), so the published types name no ioredis;
  // BullMQ runs on ioredis, so it is an ioredis client, and so is its duplicate.
  const command = url !== undefined ? new Redis(url, OWN) : isClient(connection!) ? (connection.duplicate(OWN) as Redis) : new Redis({ ...connection, ...OWN });
  const subscriber = command.duplicate();
  let closing = false;
  let connected = false;
  let lost = false;
  let lastError: Error | undefined;
  // ioredis reports every failed reconnection as an 'error'; the lost connection is reported once, below.
  const remember = (error: Error): void => void (lastError = error);
  command.on('error', remember);
  subscriber.on('error', remember);
  command.on('close', () => {
    if (closing || lost || !connected) return;
    lost = true;
    logger.warn(`lost the connection to Redis at ${where}; reconnecting (deliveries wait in Redis meanwhile)`, { error: lastError?.message });
  });
  command.on('ready', () => {
    connected = true;
    if (!lost || closing) return;
    lost = false;
    logger.info(`reconnected to Redis at ${where}; carrying on with the deliveries it kept`);
  });
  let subscriberLost = false;
  subscriber.on('close', () => void (subscriberLost = connected && !closing));
  subscriber.on('ready', () => {
    if (!subscriberLost || closing) return;
    subscriberLost = false;
    onBack();
  });
  const close = async (): Promise<void> => {
    closing = true;
    // QUIT waits for a reply, which a client that is reconnecting would wait for as long as Redis is away.
    await Promise.all([command, subscriber].map((client) => (client.status === 'ready' ? client.quit().then(() => undefined, () => client.disconnect()) : client.disconnect())));
  };
  try {
    await command.connect();
    await subscriber.connect();
  } catch (error) {
    closing = true;
    command.disconnect();
    subscriber.disconnect();
    const reason = lastError?.message ?? (error as Error).message;
    throw new EmitterStateError('redis_unreachable', `Cannot connect to Redis at ${where}: ${reason}.`, { cause: lastError ?? error });
  }
  return { command, subscriber, close };
}

/** Whether an error only says that Redis is unreachable for now, which the connection watch reports once. */
export function isConnectionError(error: unknown): boolean {
  const { code, message = '' } = (error ?? {}) as { code?: string; message?: string };
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'].includes(code ?? '') ||
    /Connection is closed|ECONNREFUSED|ECONNRESET|Stream isn't writeable|MaxRetriesPerRequest/.test(message)
  );
}
