import { createEmitter, type WebhookEmitter } from '../emitter/emitter.js';
import { readOutboxFile, SharedFileOutbox } from '../emitter/shared-file-outbox.js';
import { toDelivery } from '../emitter/view.js';
import type { Delivery } from '../emitter/types.js';
import { FileLockedError, type LockHolder } from '../protocol/errors.js';
import { ExitError } from './errors.js';
import { quietLogger } from './logger.js';

/** How long a command waits for another's write to the outbox: each holds its lock for milliseconds. */
export const OUTBOX_LOCK_WAIT_MS = 10_000;

/** A started emitter on the shared outbox, and that outbox. */
export interface OutboxEmitter {
  emitter: WebhookEmitter;
  outbox: SharedFileOutbox;
}

/**
 * The CLI's emitter: the outbox file shared with every other `cliphook` process (parallel triggers
 * each send their own deliveries and see each other's), private addresses allowed (a development
 * tool), warnings on stderr. An outbox that cannot be used ends the command with exit 1 and the reason,
 * not a stack. `prepare` runs before `start()`, which resumes the pending deliveries no live process is
 * sending: listeners attached there see every attempt.
 */
export async function startOutboxEmitter(file: string, timeoutMs: number, prepare?: (emitter: WebhookEmitter) => void): Promise<OutboxEmitter> {
  const outbox = new SharedFileOutbox({ file, lockWaitMs: OUTBOX_LOCK_WAIT_MS, warn: (message) => quietLogger.warn(message) });
  const emitter = createEmitter({ store: outbox, allowPrivateNetworks: true, timeoutMs, logger: quietLogger });
  prepare?.(emitter);
  try {
    await emitter.start();
  } catch (error) {
    await emitter.stop().catch(() => undefined);
    throw outboxError(file, error);
  }
  return { emitter, outbox };
}

/** The exit for an outbox that could not be read or written: busy for too long, or unreadable. */
export function outboxError(file: string, error: unknown): ExitError {
  if (error instanceof FileLockedError) {
    return new ExitError(
      `cannot use the outbox: ${file} stayed locked for ${OUTBOX_LOCK_WAIT_MS / 1000} s by ${who(error.holder)}; ` +
        'a cliphook command holds it only while it writes, so that process is stuck or paused: resume or stop it, or use another --outbox',
      1,
    );
  }
  return new ExitError(`cannot use the outbox: ${(error as Error)?.message ?? String(error)}`, 1);
}

/** "process 4242 on dev-box (since 2026-11-23T18:00:00.000Z)" */
export function who(holder: LockHolder | null): string {
  return holder ? `process ${holder.pid} on ${holder.hostname} (since ${holder.since})` : 'another process';
}

/**
 * Reads the outbox file without starting an emitter or taking its lock, so looking never sends or
 * writes anything (every write renames a whole file into place). Newest first.
 */
export async function readOutbox(file: string): Promise<Delivery[]> {
  try {
    const records = await readOutboxFile(file, (message) => quietLogger.warn(message));
    // Reversed first, so of two created in the same millisecond the later line comes first.
    return records.map(toDelivery).reverse().sort((a, b) => b.createdAt - a.createdAt);
  } catch (error) {
    throw new ExitError(`cannot read the outbox: ${(error as Error).message}`, 1);
  }
}
