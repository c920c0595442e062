import { CliphookError } from '../protocol/errors.js';

/** `get`-style calls on a delivery id the emitter does not hold (never sent, or past retention). */
export class DeliveryNotFoundError extends CliphookError {
  readonly deliveryId: string;
  constructor(deliveryId: string) {
    super('delivery_not_found', `No delivery ${JSON.stringify(deliveryId)} in this emitter's outbox.`);
    this.deliveryId = deliveryId;
  }
}

/** A call the emitter cannot take in its current state: `send()` before `start()` or after `stop()`. */
export class EmitterStateError extends CliphookError {
  constructor(code: 'emitter_not_started' | 'emitter_stopped', message: string) {
    super(code, message);
  }
}
