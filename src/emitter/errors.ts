import { CliphookError } from '../protocol/errors.js';

/**
 * `redeliver()` of a delivery id the emitter does not hold (never sent, or past retention).
 * @example
 * try { await emitter.redeliver(id); } catch (error) { if (error instanceof DeliveryNotFoundError) res.status(404); }
 */
export class DeliveryNotFoundError extends CliphookError {
  readonly deliveryId: string;
  constructor(deliveryId: string) {
    super('delivery_not_found', `No delivery ${JSON.stringify(deliveryId)} in this emitter's outbox.`);
    this.deliveryId = deliveryId;
  }
}

/**
 * A call the emitter cannot take in its current state: `send()` before `start()` or after `stop()`.
 * @example error.code // 'emitter_not_started' | 'emitter_stopped'
 */
export class EmitterStateError extends CliphookError {
  constructor(code: 'emitter_not_started' | 'emitter_stopped', message: string) {
    super(code, message);
  }
}
