import { attemptDelivery, createAttemptOptions, nextDelay, type AttemptOptions } from './attempt.js';
import { DeliveryNotFoundError, EmitterStateError } from '../protocol/errors.js';
import type { EmitterEngine, EmitterStats } from './engine.js';
import type { ResolvedEmitterOptions } from './options.js';
import { createRecord, type SendInput } from './new-record.js';
import { DeliveryBook, type ListOptions } from './records.js';
import { toDelivery } from './view.js';
import { FairQueue } from './fair-queue.js';
import type { Listeners, EmitterEvents } from './listeners.js';
import type { Delivery, DeliveryAttempt, DeliveryRecord } from './types.js';

type Status = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * The emitter on an outbox (the file outbox by default): signs and POSTs webhooks, retrying on the spec's
 * schedule with one timer for all scheduled deliveries. `WebhookEmitter` runs it when no `queue` is given.
 */
export class OutboxEngine implements EmitterEngine {
  readonly #options: ResolvedEmitterOptions;
  readonly #book: DeliveryBook;
  readonly #queue: FairQueue;
  readonly #attempt: AttemptOptions & { close(): void };
  readonly #inFlight = new Set<Promise<void>>();
  readonly #writes = new Set<Promise<void>>();
  /** Redeliveries whose change is being saved, by delivery id. */
  readonly #redelivering = new Map<string, Promise<Delivery>>();
  readonly #listeners: Listeners;
  #status: Status = 'new';
  #started: Promise<void> | null = null;
  #stopped: Promise<void> | null = null;

  constructor(resolved: ResolvedEmitterOptions, listeners: Listeners) {
    this.#options = resolved;
    this.#book = new DeliveryBook(resolved.retainFinished);
    this.#listeners = listeners;
    this.#queue = new FairQueue(resolved.clock, () => this.#pump(), resolved.maxPerDestination);
    this.#attempt = createAttemptOptions(resolved);
  }

  /**
   * Loads the outbox and resumes it: due deliveries go out at once, scheduled ones wait for their slot,
   * and an attempt that was in flight when the process died is made again (at-least-once).
   */
  start(): Promise<void> {
    if (this.#status === 'stopping' || this.#status === 'stopped') {
      return Promise.reject(new EmitterStateError('emitter_stopped', 'This emitter was stopped; create a new one.'));
    }
    this.#started ??= this.#load();
    return this.#started;
  }

  /** Persists a delivery, then makes its first attempt at once. Resolves once it is on disk, not delivered. */
  async send(input: SendInput): Promise<Delivery> {
    this.#assertRunning();
    // A caller's own id makes the enqueue idempotent: the delivery it names is not made twice.
    const known = typeof input?.id === 'string' ? this.#book.get(input.id) : undefined;
    if (known) return known;
    const record = createRecord(input, this.#options);
    this.#book.add(record);
    try {
      await this.#options.store.save(record);
    } catch (error) {
      // The caller is told it failed, so a later write must not persist it and send it after a restart.
      this.#book.remove(record.id);
      await this.#options.store.delete([record.id]).catch(() => undefined);
      throw error;
    }
    this.#enqueue(record);
    return toDelivery(record);
  }

  /** The delivery with this id, or `undefined`. */
  get(id: string): Delivery | undefined {
    return this.#book.get(id);
  }

  /** Deliveries, newest first. */
  list(options?: ListOptions): Delivery[] {
    return this.#book.list(options);
  }

  /**
   * Sends a delivery again with the same id (and a fresh `delivered_at`): at once, and on a fresh
   * schedule unless `retry` is false. A pending one is moved to now; one in flight is left alone.
   * Rejects, changing nothing, when the outbox cannot store the change.
   */
  async redeliver(id: string, { retry }: { retry?: boolean } = {}): Promise<Delivery> {
    this.#assertRunning();
    if (!this.#book.has(id)) throw new DeliveryNotFoundError(id);
    if (retry !== undefined && typeof retry !== 'boolean') throw new TypeError(`Expected \`retry\` to be a boolean, got ${JSON.stringify(retry)}.`);
    // One redelivery of a delivery at a time: a second call waits for the first, then sees what it did,
    // so two calls at once cannot queue the record twice and send every later slot twice.
    for (let busy = this.#redelivering.get(id); busy; busy = this.#redelivering.get(id)) await busy.catch(() => undefined);
    this.#assertRunning();
    const record = this.#book.record(id);
    if (!record) throw new DeliveryNotFoundError(id);
    if (record.state === 'delivering') return toDelivery(record);
    const done = this.#redeliver(record, retry);
    this.#redelivering.set(id, done);
    try {
      return await done;
    } finally {
      if (this.#redelivering.get(id) === done) this.#redelivering.delete(id);
    }
  }

  async #redeliver(record: DeliveryRecord, retry: boolean | undefined): Promise<Delivery> {
    const before = { state: record.state, round: record.round, retry: record.retry, nextAttemptAt: record.nextAttemptAt };
    const wasQueued = record.state === 'pending';
    // Out of the queue and out of retention while the change is saved: no attempt can start from a
    // half-made change, no heap entry changes its key in place, and nothing forgets the record meanwhile.
    if (wasQueued) this.#queue.remove(record);
    else this.#book.markUnfinished(record.id);
    if (!wasQueued) record.round = record.attempts.length;
    record.state = 'pending';
    if (retry !== undefined) record.retry = retry;
    record.nextAttemptAt = this.#options.clock.now();
    try {
      await this.#options.store.save(record);
    } catch (error) {
      // The caller is told it failed, so the delivery goes back to where it was, in memory and in the outbox.
      Object.assign(record, before);
      if (wasQueued) {
        this.#queue.add(record);
        this.#pump();
      } else {
        this.#book.markFinished(record.id);
        this.#forgetPastRetention();
      }
      this.#persist(this.#options.store.save(record));
      throw error;
    }
    this.#enqueue(record);
    return toDelivery(record);
  }

  /** Counts for dashboards and benchmarks: deliveries waiting, attempts in flight. */
  get stats(): EmitterStats {
    return { pending: this.#queue.size, inFlight: this.#inFlight.size, total: this.#book.size };
  }

  /** Stops taking due deliveries, lets attempts in flight finish, persists, and frees the timer and sockets. */
  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #load(): Promise<void> {
    this.#status = 'starting';
    const records = await this.#options.store.load();
    const now = this.#options.clock.now();
    for (const record of records) {
      // In flight when the process died: the receiver may or may not have it, so it goes again.
      if (record.state === 'delivering') Object.assign(record, { state: 'pending', nextAttemptAt: now });
      if (record.state === 'pending') this.#queue.add(Object.assign(record, { nextAttemptAt: record.nextAttemptAt ?? now }));
    }
    this.#book.restore(records);
    this.#forgetPastRetention();
    if (this.#status !== 'starting') return; // stopped while loading
    this.#status = 'running';
    this.#pump();
  }

  #assertRunning(): void {
    if (this.#status === 'running') return;
    if (this.#status === 'stopping' || this.#status === 'stopped') throw new EmitterStateError('emitter_stopped', 'This emitter was stopped.');
    throw new EmitterStateError('emitter_not_started', 'Call `await emitter.start()` before sending.');
  }

  #enqueue(record: DeliveryRecord): void {
    if (this.#status !== 'running') return; // stored: the next start() sends it
    this.#queue.add(record);
    this.#pump();
  }

  /**
   * Starts every due delivery there is room for, taking the destinations in turn (each up to its
   * `maxPerDestination`), then arms the one timer for the next.
   */
  #pump(): void {
    if (this.#status !== 'running') return;
    const now = this.#options.clock.now();
    while (this.#inFlight.size < this.#options.concurrency) {
      const record = this.#queue.popDue(now);
      if (!record) break;
      // Only a pending record is sent: a stale entry must never start a second attempt of one in flight.
      if (record.state !== 'pending') {
        this.#queue.release(record);
        continue;
      }
      const run = this.#run(record).finally(() => {
        this.#inFlight.delete(run);
        this.#queue.release(record);
        this.#pump();
      });
      this.#inFlight.add(run);
    }
    // When every slot is busy the next finished attempt pumps again; no timer is needed meanwhile.
    if (this.#inFlight.size < this.#options.concurrency) this.#queue.arm();
    else this.#queue.disarm();
  }

  async #run(record: DeliveryRecord): Promise<void> {
    record.state = 'delivering';
    record.nextAttemptAt = null;
    const { attempt, outcome } = await attemptDelivery(record, this.#attempt);
    // A new exact-size array, not push(): V8 grows a pushed-to array to 17 slots, ~130 B more on each of
    // 100,000 waiting deliveries.
    record.attempts = record.attempts.concat([attempt]);
    const delay = nextDelay(record, outcome, this.#options.retrySchedule);
    if (outcome === 'delivered') this.#finish(record, 'delivered');
    else if (delay === undefined) this.#finish(record, 'failed');
    else {
      record.state = 'pending';
      record.nextAttemptAt = this.#options.clock.now() + delay;
      this.#queue.add(record);
    }
    this.#persist(this.#options.store.save(record));
    this.#forgetPastRetention(); // after the save, or a forgotten record would be written back
    this.#emit('attempt', record, attempt);
    if (record.state !== 'pending') this.#emit(record.state as 'delivered' | 'failed', record);
  }

  #finish(record: DeliveryRecord, state: 'delivered' | 'failed'): void {
    record.state = state;
    record.nextAttemptAt = null;
    this.#book.markFinished(record.id);
  }

  /** Forgets the oldest finished deliveries beyond `retainFinished`, here and in the outbox. */
  #forgetPastRetention(): void {
    const forgotten = this.#book.forgetPastRetention();
    if (forgotten.length > 0) this.#persist(this.#options.store.delete(forgotten));
  }

  /** Tracks a write nobody awaits, so `stop()` can, and a failure is logged rather than lost. */
  #persist(write: Promise<void>): void {
    const tracked = write
      .catch((error: unknown) => this.#options.logger.error('could not write the outbox', { error: (error as Error)?.message ?? String(error) }))
      .finally(() => this.#writes.delete(tracked));
    this.#writes.add(tracked);
  }

  #emit(name: keyof EmitterEvents, record: DeliveryRecord, attempt?: DeliveryAttempt): void {
    if (this.#listeners.has(name)) this.#listeners.emit(name, toDelivery(record), attempt);
  }

  async #stop(): Promise<void> {
    const wasStarted = this.#status !== 'new';
    this.#status = 'stopping';
    this.#queue.disarm();
    if (wasStarted) await this.#started?.catch(() => undefined);
    this.#queue.disarm();
    await Promise.all(this.#inFlight);
    await Promise.all(this.#writes);
    try {
      // Closed even if never started: a FileOutbox holds its file from construction.
      await this.#options.store.close();
    } finally {
      this.#attempt.close();
      this.#status = 'stopped';
    }
  }
}
