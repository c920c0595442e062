import { access } from 'node:fs/promises';
import { createEmitter, type WebhookEmitter } from '../emitter/emitter.js';
import { FileOutbox } from '../emitter/file-outbox.js';
import { toDelivery } from '../emitter/view.js';
import type { Delivery } from '../emitter/types.js';
import { ExitError } from './errors.js';
import { quietLogger } from './logger.js';

/**
 * The CLI's emitter: the file outbox, private addresses allowed (a development tool), warnings on
 * stderr. An outbox that cannot be read ends the command with exit 1 and the reason, not a stack.
 * `prepare` runs before `start()`, which resumes the outbox's pending deliveries: listeners attached
 * there see every attempt.
 */
export async function startOutboxEmitter(file: string, timeoutMs: number, prepare?: (emitter: WebhookEmitter) => void): Promise<WebhookEmitter> {
  const emitter = createEmitter({ store: new FileOutbox({ file }), allowPrivateNetworks: true, timeoutMs, logger: quietLogger });
  prepare?.(emitter);
  try {
    await emitter.start();
  } catch (error) {
    await emitter.stop().catch(() => undefined);
    throw new ExitError(`cannot use the outbox: ${(error as Error).message}`, 1);
  }
  return emitter;
}

/**
 * Reads the outbox file without starting an emitter, so looking never sends anything, and never writes
 * it: a `trigger --retry` in another process may be writing the same file.
 */
export async function readOutbox(file: string): Promise<Delivery[]> {
  // No file, no deliveries; and no folder created just by looking.
  if (!(await exists(file))) return [];
  const outbox = new FileOutbox({ file });
  try {
    return (await outbox.load()).map(toDelivery);
  } catch (error) {
    throw new ExitError(`cannot read the outbox: ${(error as Error).message}`, 1);
  } finally {
    await outbox.close();
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new ExitError(`cannot read the outbox: ${(error as Error).message}`, 1);
  }
}
