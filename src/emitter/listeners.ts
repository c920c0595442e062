import type { Delivery, DeliveryAttempt, EmitterLogger } from './types.js';

/** The emitter's events, for the CLI and the inspector. */
export interface EmitterEvents {
  /** An attempt ended; `delivery` shows the state it left (with `nextAttemptAt` when a retry is due). */
  attempt: (delivery: Delivery, attempt: DeliveryAttempt) => void;
  /** A 2xx came back. */
  delivered: (delivery: Delivery) => void;
  /** A 4xx came back, the address was refused, or the last attempt of the schedule failed. */
  failed: (delivery: Delivery) => void;
}

export type EmitterEventName = keyof EmitterEvents;

/**
 * Listeners by event. A listener that throws (or rejects) is logged and the others still run: the
 * delivery's bookkeeping must never depend on a UI callback.
 */
export class Listeners {
  readonly #sets: { [K in EmitterEventName]: Set<EmitterEvents[K]> } = { attempt: new Set(), delivered: new Set(), failed: new Set() };
  readonly #logger: EmitterLogger;

  constructor(logger: EmitterLogger) {
    this.#logger = logger;
  }

  add<K extends EmitterEventName>(name: K, listener: EmitterEvents[K]): void {
    if (!Object.hasOwn(this.#sets, name)) throw new TypeError(`Unknown emitter event ${JSON.stringify(name)}; expected attempt, delivered or failed.`);
    if (typeof listener !== 'function') throw new TypeError(`Expected a listener function for ${name}.`);
    this.#sets[name].add(listener);
  }

  delete<K extends EmitterEventName>(name: K, listener: EmitterEvents[K]): void {
    this.#sets[name]?.delete(listener);
  }

  /** True when someone listens, so the caller builds the `Delivery` view only then. */
  has(name: EmitterEventName): boolean {
    return this.#sets[name].size > 0;
  }

  emit(name: EmitterEventName, delivery: Delivery, attempt?: DeliveryAttempt): void {
    for (const listener of this.#sets[name]) {
      try {
        const result = (listener as (d: Delivery, a?: DeliveryAttempt) => unknown)(delivery, attempt);
        if (result instanceof Promise) result.catch((error: unknown) => this.#failed(name, error));
      } catch (error) {
        this.#failed(name, error);
      }
    }
  }

  #failed(name: string, error: unknown): void {
    this.#logger.warn(`a ${name} listener threw`, { error: (error as Error)?.message ?? String(error) });
  }
}
