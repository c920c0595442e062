import type { WebhookEmitter } from '../emitter/emitter.js';
import type { Delivery, DeliveryAttempt } from '../emitter/types.js';
import { attemptLine, humanDelay, print, type Palette } from './output.js';

/**
 * Prints the attempts of one delivery as they end and resolves once it is delivered or failed.
 * Listening starts before the send, so an attempt that ends before `follow(id)` is called is not missed.
 */
export function follower(emitter: WebhookEmitter, p: Palette, { quiet = false }: { quiet?: boolean } = {}) {
  const early: [Delivery, DeliveryAttempt][] = [];
  let target: { id: string; resolve: (delivery: Delivery) => void } | null = null;

  const onAttempt = (delivery: Delivery, attempt: DeliveryAttempt): void => {
    if (!target) return void early.push([delivery, attempt]);
    if (delivery.id !== target.id) return;
    if (!quiet) {
      print(attemptLine(delivery.url, attempt, p));
      if (delivery.state === 'pending' && delivery.nextAttemptAt !== null) {
        const wait = delivery.nextAttemptAt - (attempt.at + attempt.latencyMs);
        const when = new Date(delivery.nextAttemptAt).toISOString().slice(11, 19);
        print(p.dim(`    next attempt in ${humanDelay(wait)} (at ${when} UTC); the delivery is kept in the outbox`));
      }
    }
    if (delivery.state === 'delivered' || delivery.state === 'failed') {
      emitter.off('attempt', onAttempt);
      target.resolve(delivery);
    }
  };
  emitter.on('attempt', onAttempt);

  return {
    follow(id: string): Promise<Delivery> {
      return new Promise((resolve) => {
        target = { id, resolve };
        for (const [delivery, attempt] of early.splice(0)) onAttempt(delivery, attempt);
      });
    },
  };
}
