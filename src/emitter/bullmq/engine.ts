import type { Queue } from 'bullmq';
import { DeliveryNotFoundError, EmitterStateError } from '../../protocol/errors.js';
import type { EmitterEngine, EmitterStats } from '../engine.js';
import type { Listeners } from '../listeners.js';
import { measured } from '../measure.js';
import { createRecord, type SendInput } from '../new-record.js';
import type { ResolvedQueueOptions } from '../options.js';
import { DeliveryQueue } from '../queue.js';
import type { ListOptions } from '../records.js';
import { systemClock, type Delivery } from '../types.js';
import { toDelivery } from '../view.js';
import { isConnectionError, openRedis, type RedisLinks } from './connection.js';
import { RecordMirror } from './mirror.js';
import { jobIdOf, parseChange, recordKeys, RedisRecordStore, type RecordKeys, type StoredRecord, type Written } from './record-store.js';
import { addDeliveryJob, queueMissingJobs, startWorker, type DeliveryWorker } from './worker.js';

type Status = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * The emitter on a BullMQ queue in Redis, shared by every process with the same queue. Redis holds the
 * records (a hash, written with version checks) and BullMQ the schedule (one job per round, delayed by the
 * real schedule delay); each process keeps a mirror of the records for `get()` and `list()`, kept current
 * by the changes every process publishes. With an injected clock (the service's), a retry whose
 * `nextAttemptAt` that clock reaches is promoted at once, so a simulated clock that runs ahead drives them.
 */
export class BullmqEngine implements EmitterEngine {
  readonly #options: ResolvedQueueOptions;
  readonly #listeners: Listeners;
  readonly #keys: RecordKeys;
  readonly #mirror: RecordMirror;
  /** Retries waiting for the injected clock, one timer for all; none with the system clock (BullMQ's delay is that). */
  readonly #timers: DeliveryQueue<StoredRecord> | null;
  /** Deliveries this process made due (send, redeliver, its clock) that no worker has begun yet. */
  readonly #due = new Set<string>();
  #status: Status = 'new';
  #started: Promise<void> | null = null;
  #stopped: Promise<void> | null = null;
  #links: RedisLinks | null = null;
  #records: RedisRecordStore | null = null;
  #queue: Queue | null = null;
  #worker: DeliveryWorker | null = null;
  #resyncing: Promise<void> = Promise.resolve();

  constructor(options: ResolvedQueueOptions, listeners: Listeners) {
    this.#options = options;
    this.#listeners = listeners;
    this.#keys = recordKeys(options.queue.prefix, options.queue.name);
    this.#mirror = new RecordMirror((before, after) => this.#changed(before, after));
    this.#timers = options.clock === systemClock ? null : new DeliveryQueue<StoredRecord>(options.clock, () => this.#bringDue());
  }

  start(): Promise<void> {
    if (this.#status === 'stopping' || this.#status === 'stopped') {
      return Promise.reject(new EmitterStateError('emitter_stopped', 'This emitter was stopped; create a new one.'));
    }
    this.#started ??= this.#open();
    return this.#started;
  }

  async send(input: SendInput): Promise<Delivery> {
    this.#assertRunning();
    const record = createRecord(input, this.#options);
    const { created, record: stored } = await this.#records!.create({ ...record, gen: 0, job: jobIdOf(record.id, 0) });
    this.#mirror.apply(stored);
    if (created) this.#due.add(stored.id);
    // A caller's own id already held: nothing new, but a sender that died between its write and its job
    // left a first attempt without a job, and this queues it (BullMQ keeps one job per id).
    if (!created && !(stored.state === 'pending' && stored.attempts.length === 0)) return toDelivery(stored);
    try {
      await addDeliveryJob(this.#queue!, stored, this.#options.clock.now());
    } catch (error) {
      if (created) {
        // The caller is told it failed, so it must not be sent later by a process that finds it.
        await this.#records!.drop(stored.id, stored.v).catch(() => undefined);
        this.#mirror.forget([stored.id]);
        this.#due.delete(stored.id);
      }
      throw error;
    }
    return toDelivery(stored);
  }

  get(id: string): Delivery | undefined {
    return this.#mirror.get(id);
  }

  list(options?: ListOptions): Delivery[] {
    return this.#mirror.list(options);
  }

  async redeliver(id: string, { retry }: { retry?: boolean } = {}): Promise<Delivery> {
    this.#assertRunning();
    if (retry !== undefined && typeof retry !== 'boolean') throw new TypeError(`Expected \`retry\` to be a boolean, got ${JSON.stringify(retry)}.`);
    const now = this.#options.clock.now();
    // Decided on what Redis holds, so redeliveries from two processes at once queue one new round.
    const written = await this.#records!.update(id, (record) => {
      if (record.state === 'delivering') return null;
      const retrying = { ...record, retry: retry ?? record.retry, nextAttemptAt: now };
      if (record.state === 'pending') return retrying;
      const gen = record.gen + 1;
      return { ...retrying, state: 'pending', round: record.attempts.length, gen, job: jobIdOf(id, gen) };
    });
    if (!written) throw new DeliveryNotFoundError(id);
    this.#take(written);
    const { record, before, changed } = written;
    if (!changed) return toDelivery(record);
    this.#due.add(id);
    if (before.state === 'pending') {
      await this.#promote(record);
      return toDelivery(record);
    }
    try {
      await addDeliveryJob(this.#queue!, record, now);
    } catch (error) {
      // Back to where it was, so the caller's failure changes nothing (unless another process moved it on).
      const { state, round, retry: wasRetry, nextAttemptAt, gen, job } = before;
      const undone = await this.#records!.update(id, (current) => (current.v === record.v ? { ...current, state, round, retry: wasRetry, nextAttemptAt, gen, job } : null)).catch(() => undefined);
      if (undone) this.#take(undone);
      this.#due.delete(id);
      throw error;
    }
    return toDelivery(record);
  }

  get stats(): EmitterStats {
    return { pending: this.#mirror.pending, inFlight: (this.#worker?.attempting ?? 0) + this.#due.size, total: this.#mirror.size };
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #open(): Promise<void> {
    this.#status = 'starting';
    try {
      await this.#connect();
    } catch (error) {
      // Nothing half-open stays behind a failed start: no reconnecting client keeps the process alive.
      await this.#close().catch(() => undefined);
      throw error;
    }
  }

  async #connect(): Promise<void> {
    const { queue: config, logger } = this.#options;
    // A failed read is logged by #resync; nobody awaits this one.
    const links = await openRedis(config, logger, () => void this.#resync().catch(() => undefined));
    this.#links = links;
    if (this.#status !== 'starting') return; // stopped while connecting: stop() closes the links
    this.#records = new RedisRecordStore(links.command, this.#keys, this.#options.retainFinished);
    links.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.#keys.channel) this.#onMessage(message);
    });
    // Subscribed before the records are read, so no change falls between the two.
    if (measured.mirror) await links.subscriber.subscribe(this.#keys.channel);
    await this.#resync();
    const { Queue } = await import('bullmq');
    const queue = new Queue(config.name, { connection: links.command, prefix: config.prefix });
    queue.on('error', (error) => this.#bullmqError(error));
    this.#queue = queue;
    await queue.waitUntilReady();
    // A process with `worker: false` reads and queues; the processes with workers make the attempts.
    if (config.worker) {
      this.#worker = await startWorker({
        options: this.#options,
        records: this.#records,
        connection: links.command,
        take: (written) => this.#take(written),
        emit: (name, record, attempt) => {
          if (this.#listeners.has(name)) this.#listeners.emit(name, toDelivery(record), attempt);
        },
        promote: (record) => void this.#promote(record),
        wake: (jobId) => this.#wake(jobId),
        onError: (error) => this.#bullmqError(error),
      });
      if (this.#status !== 'starting') return;
      await queueMissingJobs(queue, links.command, this.#mirror.records(), this.#options.clock.now());
      if (this.#status !== 'starting') return;
    }
    this.#status = 'running';
    this.#worker?.run();
    this.#timers?.arm();
  }

  /** Reads every record again (at start, and when the subscriber is back after a lost connection). */
  #resync(): Promise<void> {
    const run = this.#resyncing.then(async () => {
      if (!this.#records || this.#status === 'stopping' || this.#status === 'stopped') return;
      if (this.#status === 'running' && measured.mirror) await this.#links!.subscriber.subscribe(this.#keys.channel);
      this.#mirror.beginLoad();
      let records: StoredRecord[] = [];
      try {
        records = await this.#records.loadAll();
      } finally {
        this.#mirror.finishLoad(records);
      }
    });
    this.#resyncing = run.catch((error: unknown) => this.#options.logger.warn('could not read the deliveries from Redis', { error: (error as Error)?.message }));
    return run;
  }

  #onMessage(message: string): void {
    try {
      const { record, gone } = parseChange(message, ({ v, job }) => {
        // The delivery of a job: its id, or `<id>.<n>` for its n-th redelivery.
        const held = this.#mirror.record(job) ?? this.#mirror.record(job.slice(0, job.lastIndexOf('.')));
        return held !== undefined && held.job === job && held.v >= v;
      });
      if (record) this.#mirror.apply(record);
      this.#mirror.forget(gone);
    } catch (error) {
      this.#options.logger.warn('ignored a malformed change on the deliveries channel', { error: (error as Error).message });
    }
  }

  /** Takes a write of this process into the mirror at once, without waiting for its published echo. */
  #take({ record, gone }: Written): void {
    this.#mirror.apply(record);
    this.#mirror.forget(gone);
  }

  /** Every change the mirror takes: a delivery that began leaves `#due`; a retry waits for the clock. */
  #changed(before: StoredRecord | undefined, after: StoredRecord | undefined): void {
    if (after?.state !== 'pending') this.#due.delete((after ?? before)!.id);
    const timers = this.#timers;
    if (!timers) return;
    if (before?.state === 'pending') timers.remove(before);
    // Only a retry waits: a first attempt or a redelivery is queued without delay.
    if (after?.state === 'pending' && after.attempts.length > after.round) timers.add(after);
    if (this.#status === 'running') timers.arm();
  }

  /** The injected clock reached retries: promote their delayed jobs, which BullMQ would run later. */
  #bringDue(): void {
    if (this.#status !== 'running') return;
    const now = this.#options.clock.now();
    for (let record = this.#timers!.popDue(now); record; record = this.#timers!.popDue(now)) {
      if (record.state !== 'pending') continue;
      this.#due.add(record.id);
      void this.#promote(record);
    }
    this.#timers!.arm();
  }

  /** Moves a delivery's delayed job to now; a job this process is still moving is promoted once moved. */
  async #promote(record: StoredRecord): Promise<void> {
    if (this.#status !== 'running' || this.#worker?.defer(record)) return;
    try {
      const job = await this.#queue!.getJob(record.job);
      if (job) await job.promote();
      else if (this.#mirror.record(record.id)?.job === record.job && this.#mirror.record(record.id)?.state === 'pending') {
        await addDeliveryJob(this.#queue!, record, this.#options.clock.now()); // its job was lost: queue it again
      }
    } catch (error) {
      // Not delayed: another process promoted it first, or it is waiting or running already.
      if (!/not in the delayed state/.test((error as Error)?.message)) {
        this.#options.logger.warn(`could not bring delivery ${record.id} forward`, { error: (error as Error)?.message });
      }
    }
  }

  /** Moves a job parked for its destination's cap back to the waiting list; `false` when it is not delayed. */
  async #wake(jobId: string): Promise<boolean> {
    const job = this.#status === 'running' ? await this.#queue?.getJob(jobId) : undefined;
    if (!job) return false;
    try {
      await job.promote();
      return true;
    } catch (error) {
      if (/not in the delayed state/.test((error as Error)?.message)) return false;
      throw error;
    }
  }

  #bullmqError(error: unknown): void {
    if (this.#status === 'stopping' || this.#status === 'stopped' || isConnectionError(error)) return;
    const message = (error as Error)?.message ?? String(error);
    // A command repeated after a reconnection (its first run had moved the job on), or a lock that expired
    // while Redis was away or the worker was too slow (the job is then made again: at-least-once): BullMQ's
    // bookkeeping, not a delivery's, which its record keeps.
    if (/^Missing (key|lock) for job|could not renew lock/.test(message)) this.#options.logger.warn(`BullMQ: ${message} (the delivery records are unaffected)`);
    else this.#options.logger.error(`BullMQ: ${message}`);
  }

  #assertRunning(): void {
    if (this.#status === 'running') return;
    if (this.#status === 'stopping' || this.#status === 'stopped') throw new EmitterStateError('emitter_stopped', 'This emitter was stopped.');
    throw new EmitterStateError('emitter_not_started', 'Call `await emitter.start()` before sending.');
  }

  async #stop(): Promise<void> {
    const wasStarted = this.#status !== 'new';
    this.#status = 'stopping';
    this.#timers?.disarm();
    if (wasStarted) await this.#started?.catch(() => undefined);
    this.#timers?.disarm();
    try {
      // The worker lets attempts in flight finish and records their outcome before it closes. With Redis
      // out of reach it cannot, and stop() must not wait for Redis: it lets them go, and their jobs, still
      // active in Redis, are made again by another worker once their lock expires (at-least-once).
      await this.#close();
    } finally {
      this.#status = 'stopped';
    }
  }

  /** Closes the worker, the queue and the connections, whichever are open. */
  async #close(): Promise<void> {
    const [worker, queue, links] = [this.#worker, this.#queue, this.#links];
    const force = links?.command.status !== 'ready';
    this.#worker = null;
    this.#queue = null;
    this.#links = null;
    try {
      await worker?.close(force);
      if (!force) await queue?.close();
      await this.#resyncing;
    } finally {
      await links?.close();
      this.#due.clear();
    }
  }
}
