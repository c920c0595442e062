import { ChannelStore } from './channels.js';
import { FileRelayStore } from './file-relay-store.js';
import type { RelayBus } from './relay-bus.js';
import type { RelayStore } from './relay-store.js';
import type { ResolvedRelayOptions } from './server-options.js';

// Sequence numbers reserved per write of the channel's high-water mark: one write per 1,024 events, and a
// relay restarted after a crash skips at most that many numbers, never reusing one.
const SEQ_BLOCK = 1024;

/** The store the options ask for and, when it is shared by several processes, the bus between them (none yet). */
export function backend(options: ResolvedRelayOptions): { store: RelayStore; bus: RelayBus | null } {
  const { clock, scheduler, logger, maxBufferedEvents: maxEvents, maxBufferedBytes: maxBytes, maxBufferAgeMs: maxAgeMs, maxChannels, maxTotalBufferedBytes: maxTotalBytes } = options;
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
