import type { SendInput } from './new-record.js';
import type { ListOptions } from './records.js';
import type { Delivery } from './types.js';

/** What `emitter.stats` shows. */
export interface EmitterStats {
  /** Deliveries waiting for an attempt (on Redis: across every process that shares the queue). */
  pending: number;
  /** Attempts this process is making now (on Redis: and deliveries it made due that no worker has begun yet). */
  inFlight: number;
  /** Deliveries held, finished ones included. */
  total: number;
}

/**
 * One way of keeping and sending deliveries behind `WebhookEmitter`: an outbox in this process
 * (`OutboxEngine`), or a BullMQ queue on Redis shared by several processes (`BullmqEngine`). The facade
 * owns the listeners and hands them in; each engine emits on them.
 */
export interface EmitterEngine {
  start(): Promise<void>;
  send(input: SendInput): Promise<Delivery>;
  get(id: string): Delivery | undefined;
  list(options?: ListOptions): Delivery[];
  redeliver(id: string, options: { retry?: boolean }): Promise<Delivery>;
  readonly stats: EmitterStats;
  stop(): Promise<void>;
}
