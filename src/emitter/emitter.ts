import { BullmqEngine } from './bullmq/engine.js';
import type { EmitterEngine, EmitterStats } from './engine.js';
import { Listeners, type EmitterEvents } from './listeners.js';
import type { SendInput } from './new-record.js';
import { resolveEmitterOptions, type EmitterOptions } from './options.js';
import { OutboxEngine } from './outbox-engine.js';
import type { ListOptions } from './records.js';
import type { Delivery } from './types.js';

/**
 * Signs and POSTs webhooks, retrying on the spec's schedule: from a durable outbox in this process (the
 * default), or from a BullMQ queue on Redis that several processes share (`queue`, `redisUrl`). Create it
 * with `createEmitter`.
 * @example
 * const emitter = createEmitter();
 * emitter.on('failed', (delivery) => alert(`webhook ${delivery.id} to ${delivery.url} failed`));
 * await emitter.start();
 */
export class WebhookEmitter {
  readonly #engine: EmitterEngine;
  readonly #listeners: Listeners;

  constructor(options?: EmitterOptions) {
    const resolved = resolveEmitterOptions(options);
    this.#listeners = new Listeners(resolved.logger);
    // The BullMQ engine loads bullmq and ioredis in start(), so an outbox emitter never loads them.
    if ('queue' in resolved) {
      this.#engine = new BullmqEngine(resolved, this.#listeners);
      return;
    }
    try {
      this.#engine = new OutboxEngine(resolved, this.#listeners);
    } catch (error) {
      // A refused `wrapTransport` leaves the default outbox's file free for a later createEmitter(); a given store
      // stays the caller's.
      if (options?.store === undefined) void resolved.store.close();
      throw error;
    }
  }

  /**
   * Loads what is stored and resumes it: due deliveries go out at once, scheduled ones wait for their slot,
   * and an attempt that was in flight when a process died is made again (at-least-once). On Redis, rejects
   * with an `EmitterStateError` (`redis_unreachable`) when Redis cannot be reached.
   */
  start(): Promise<void> {
    return this.#engine.start();
  }

  /**
   * Stores a delivery, then makes its first attempt at once. Resolves once it is durable (on disk, or
   * acknowledged by Redis), not delivered. A second `send()` with an `id` still held returns that delivery.
   */
  send(input: SendInput): Promise<Delivery> {
    return this.#engine.send(input);
  }

  /** The delivery with this id, or `undefined`. */
  get(id: string): Delivery | undefined {
    return this.#engine.get(id);
  }

  /** Deliveries, newest first. */
  list(options?: ListOptions): Delivery[] {
    return this.#engine.list(options);
  }

  /**
   * Sends a delivery again with the same id (and a fresh `delivered_at`): at once, and on a fresh
   * schedule unless `retry` is false. A pending one is moved to now; one in flight is left alone.
   * Rejects, changing nothing, when the change cannot be stored.
   */
  redeliver(id: string, options: { retry?: boolean } = {}): Promise<Delivery> {
    return this.#engine.redeliver(id, options);
  }

  /** Listens to `attempt`, `delivered` or `failed`. A throwing listener is logged, never fatal. */
  on<K extends keyof EmitterEvents>(name: K, listener: EmitterEvents[K]): this {
    this.#listeners.add(name, listener);
    return this;
  }

  off<K extends keyof EmitterEvents>(name: K, listener: EmitterEvents[K]): this {
    this.#listeners.delete(name, listener);
    return this;
  }

  /** Counts for dashboards and benchmarks: deliveries waiting, attempts in flight, deliveries held. */
  get stats(): EmitterStats {
    return this.#engine.stats;
  }

  /** Stops taking due deliveries, lets attempts in flight finish, persists, and frees timers, sockets and connections. */
  stop(): Promise<void> {
    return this.#engine.stop();
  }
}

/**
 * Creates a durable webhook emitter: signs every attempt, retries after 30 s, 2 min, 10 min, 30 min and
 * 2 h, treats 4xx as permanent, and refuses callback URLs that point inside your network. Deliveries live
 * in a file outbox by default; `queue: bullmqQueue({ … })` or `redisUrl` shares them through Redis.
 * @example
 * const emitter = createEmitter({ store: new FileOutbox({ file: '.cliphook/outbox.json' }) });
 * await emitter.start();
 * await emitter.send({ url: 'https://example.com/webhooks', secret, event: 'video.completed', payload });
 */
export function createEmitter(options?: EmitterOptions): WebhookEmitter {
  return new WebhookEmitter(options);
}
