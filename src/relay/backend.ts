import { randomBytes } from 'node:crypto';
import { ChannelStore } from './channels.js';
import { FileRelayStore } from './file-relay-store.js';
import type { Scheduler } from './heartbeat.js';
import { RedisBus } from './redis/bus.js';
import { RedisConnection } from './redis/connection.js';
import { RedisRelayStore } from './redis/store.js';
import type { RelayBus } from './relay-bus.js';
import type { RelayStore } from './relay-store.js';
import type { RelayLogger, ResolvedRelayOptions } from './server-options.js';

// Sequence numbers reserved per write of the channel's high-water mark: one write per 1,024 events, and a
// relay restarted after a crash skips at most that many numbers, never reusing one.
const SEQ_BLOCK = 1024;

/** The store the options ask for and, when it is shared by several processes, the bus between them. */
export function backend(options: ResolvedRelayOptions): { store: RelayStore; bus: RelayBus | null } {
  const { clock, scheduler, logger, maxBufferedEvents: maxEvents, maxBufferedBytes: maxBytes, maxBufferAgeMs: maxAgeMs, maxChannels, maxTotalBufferedBytes: maxTotalBytes } = options;
  if (options.redis) return redisBackend(options.redis, { clock, scheduler, logger, maxEvents, maxBytes, maxAgeMs, maxChannels, maxTotalBytes });
  const store = new ChannelStore({
    file: options.file,
    clock,
    maxEvents,
    maxBytes,
    maxAgeMs,
    maxChannels,
    maxTotalBytes,
    scheduler,
    lazyCommitMs: 1000,
    seqBlock: SEQ_BLOCK,
    retryMs: options.retryAfterSeconds * 1000,
    log: logger,
    ...(options.fileIo ? { io: options.fileIo } : {}),
  });
  return { store: new FileRelayStore(store), bus: null };
}

function redisBackend(
  { client, url, prefix }: NonNullable<ResolvedRelayOptions['redis']>,
  { clock, scheduler, logger, ...bounds }: { clock: () => number; scheduler: Scheduler; logger: RelayLogger; maxEvents: number; maxBytes: number; maxAgeMs: number; maxChannels: number; maxTotalBytes: number },
): { store: RelayStore; bus: RelayBus } {
  const connection = new RedisConnection({ client, url, logger, scheduler, clock });
  // Random per start: answers to this process's events come back on a pub/sub channel of this name.
  const process = randomBytes(9).toString('base64url');
  const store = new RedisRelayStore({ connection, prefix, process, clock, ...bounds });
  const bus = new RedisBus({ connection, prefix, process, scheduler, log: (message) => logger.warn(message) });
  return { store, bus };
}

