import type { WebhookEmitter } from '../emitter/emitter.js';
import type { Delivery, DeliveryAttempt } from '../emitter/types.js';
import { attemptLine, humanDelay, print, sentLine, type Palette } from './output.js';

/** What `follower()` returns. */
export interface Follower {
  /**
   * Prints `(resuming 2 pending deliveries from <file>)` when the started emitter holds pending
   * deliveries other than `except`: start() resumes them, and the command sends them along with its own.
   */
  announceResumed(file: string, except?: string): void;
  /** Prints the attempts of `id` as they end; resolves once it is delivered or failed. */
  follow(id: string): Promise<Delivery>;
  /** Prints what is still held back and stops listening. Call it after `emitter.stop()`. */
  close(): void;
}

/**
 * Prints the attempts of one delivery as they end, and those of every other delivery the emitter sends
 * (resumed from the outbox), so that nothing leaves unseen. Attach it before `emitter.start()`: an
 * attempt that ends before `follow(id)` is called is held back, not missed. With `quiet` (`--json`) the
 * followed delivery prints nothing and the others go to stderr, keeping stdout machine-readable.
 */
export function follower(emitter: WebhookEmitter, p: Palette, { quiet = false }: { quiet?: boolean } = {}): Follower {
  const early: [Delivery, DeliveryAttempt][] = [];
  let target: { id: string; resolve: (delivery: Delivery) => void } | null = null;
  let closed = false;
  const note = quiet ? (line: string): void => void process.stderr.write(`${line}\n`) : print;

  const onAttempt = (delivery: Delivery, attempt: DeliveryAttempt): void => {
    if (!target && !closed) return void early.push([delivery, attempt]);
    if (delivery.id !== target?.id) {
      note(`${sentLine(delivery, p)} ${p.dim('(resumed from the outbox)')}`);
      note(attemptLine(delivery.url, attempt, p));
      return;
    }
    if (!quiet) {
      print(attemptLine(delivery.url, attempt, p));
      if (delivery.state === 'pending' && delivery.nextAttemptAt !== null) {
        const wait = delivery.nextAttemptAt - (attempt.at + attempt.latencyMs);
        const when = new Date(delivery.nextAttemptAt).toISOString().slice(11, 19);
        print(p.dim(`    next attempt in ${humanDelay(wait)} (at ${when} UTC); the delivery is kept in the outbox`));
      }
    }
    if (delivery.state === 'delivered' || delivery.state === 'failed') target.resolve(delivery);
  };
  emitter.on('attempt', onAttempt);

  return {
    announceResumed(file: string, except?: string): void {
      const resumed = emitter.list({ limit: emitter.stats.total })
        .filter((d) => (d.state === 'pending' || d.state === 'delivering') && d.id !== except).length;
      if (resumed > 0) note(p.dim(`(resuming ${resumed} pending deliver${resumed === 1 ? 'y' : 'ies'} from ${file})`));
    },
    follow(id: string): Promise<Delivery> {
      return new Promise((resolve) => {
        target = { id, resolve };
        for (const [delivery, attempt] of early.splice(0)) onAttempt(delivery, attempt);
      });
    },
    close(): void {
      closed = true;
      for (const [delivery, attempt] of early.splice(0)) onAttempt(delivery, attempt);
      emitter.off('attempt', onAttempt);
    },
  };
}
