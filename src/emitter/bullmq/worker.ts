import { hostname } from 'node:os';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { attemptDelivery, createAttemptOptions, nextDelay } from '../attempt.js';
import { destinationOf } from '../destination.js';
import type { EmitterEventName } from '../listeners.js';
import { measured } from '../measure.js';
import type { ResolvedQueueOptions } from '../options.js';
import type { DeliveryAttempt } from '../types.js';
import { DestinationLimit, redisParkedJobs } from './destination-limit.js';
import type { RedisRecordStore, StoredRecord, Written } from './record-store.js';

/** The BullMQ side of an emitter: its worker, and what the engine asks of it. */
export interface DeliveryWorker {
  /** Attempts this process is making now. */
  readonly attempting: number;
  /**
   * Promotes `record`'s job once BullMQ has moved it to its next state, if this worker is still moving it
   * (a promote before that would find it active and do nothing). `false`: not moving here, promote now.
   */
  defer(record: StoredRecord): boolean;
  /** Starts taking jobs. */
  run(): void;
  /** Lets the attempts in flight finish and record their outcome, then closes; `force`: without waiting for them. */
  close(force?: boolean): Promise<void>;
}

export interface DeliveryWorkerContext {
  options: ResolvedQueueOptions;
  records: RedisRecordStore;
  /** The connection BullMQ shares with the records (it duplicates it for its blocking reads). */
  connection: Redis;
  /** Takes a write of this process into the mirror. */
  take(written: Written): void;
  emit(name: EmitterEventName, record: StoredRecord, attempt?: DeliveryAttempt): void;
  promote(record: StoredRecord): void;
  /** Moves a delayed job to the waiting list now; `false` when it is not delayed (or gone). */
  wake(jobId: string): Promise<boolean>;
  onError(error: unknown): void;
}

const JOB_NAME = 'deliver';
const BACKOFF = 'cliphook-retry-schedule';
// The attempt itself decides when a delivery is over (UnrecoverableError); BullMQ's count never should.
const JOB_ATTEMPTS = 1_000_000;
// An attempt cannot crash its worker (a reply is read up to 64 KiB), so a job that stalls was interrupted
// by a process that died: it is always made again (at-least-once), never failed by BullMQ behind the record.
const MAX_STALLED = 1_000_000;

// How long a job parked for its destination's cap stays delayed unless an attempt that ends brings it back
// first: the bound on a job whose wake-up was lost (a worker that died, Redis restarted in between). Its
// cost: a destination that stays full has its parked jobs come back and be parked again this often.
const PARK_FALLBACK_MS = 15_000;

/** A job's data: its delivery, and that delivery's destination (a URL's origin) for the per-destination cap. */
interface DeliveryJobData {
  id: string;
  to?: string;
}

/**
 * Queues the job of a delivery's current round, delayed to its `nextAttemptAt`; a no-op if that job exists.
 * The job carries its destination, so a worker can hold it to its cap before reading the record.
 */
export function addDeliveryJob(queue: Queue, record: StoredRecord, now: number): Promise<unknown> {
  const delay = Math.max(0, (record.nextAttemptAt ?? now) - now);
  const data: DeliveryJobData = { id: record.id, to: destinationOf(record.url) };
  if (!measured.jobOptions) return queue.add(JOB_NAME, data, { jobId: record.job });
  return queue.add(JOB_NAME, data, { jobId: record.job, delay, attempts: JOB_ATTEMPTS, backoff: { type: BACKOFF }, removeOnComplete: true, removeOnFail: true });
}

/**
 * Queues a job for every waiting or in-flight delivery among `records` that has none: a process that died
 * between its write and its job, or a Redis that kept the record and lost the job. A job that turns out
 * not to be needed finds its delivery moved on and sends nothing.
 */
export async function queueMissingJobs(queue: Queue, redis: Redis, records: Iterable<StoredRecord>, now: number): Promise<void> {
  const open = [...records].filter((record) => record.state === 'pending' || record.state === 'delivering');
  for (let from = 0; from < open.length; from += 10_000) {
    const batch = open.slice(from, from + 10_000);
    const pipeline = redis.pipeline();
    for (const record of batch) pipeline.exists(queue.toKey(record.job));
    const found = (await pipeline.exec()) ?? [];
    await Promise.all(batch.map((record, i) => (found[i]?.[1] === 1 ? undefined : addDeliveryJob(queue, record, now))));
  }
}

/** A retryable reply: BullMQ delays the job by the schedule's slot, which the backoff strategy reads here. */
class RetryLaterError extends Error {
  constructor(readonly delayMs: number, reason: string) {
    super(`retry in ${delayMs} ms after ${reason}`);
    this.name = 'RetryLaterError';
  }
}

/**
 * Creates the BullMQ worker (not yet taking jobs): `concurrency` attempts at once, each one the shared
 * attempt code between two versioned writes of the record, then a verdict for BullMQ: return (2xx, or a
 * round another worker finished), `UnrecoverableError` (4xx, refused address, schedule used up), or a
 * retry whose delay the backoff strategy takes from the schedule.
 */
export async function startWorker(context: DeliveryWorkerContext): Promise<DeliveryWorker> {
  const { options, records, connection, take, emit, promote, wake, onError } = context;
  const { Worker, UnrecoverableError, DelayedError } = await import('bullmq');
  const { queue: config, clock, retrySchedule, logger } = options;
  const attemptOptions = createAttemptOptions(options);
  let attempting = 0;
  /** Jobs whose attempt ended here and that BullMQ has not moved on yet, and promotions waiting for them. */
  const moving = new Set<string>();
  const deferred = new Map<string, StoredRecord>();
  const verdicts = new WeakSet<Error>();
  const parked = redisParkedJobs(connection, `${config.prefix}:${config.name}:emitter:parked`, PARK_FALLBACK_MS);
  const limit = new DestinationLimit(options.maxPerDestination, parked, wake);

  async function deliver(job: Job<DeliveryJobData>, token?: string): Promise<void> {
    const jobId = job.id!;
    const { id, to } = job.data;
    // A job whose data names no destination is not held to the cap: nothing says which one it counts against.
    if (to !== undefined && !limit.take(to)) {
      // Not moved (its lock expired while Redis was away, or Redis is away now): the job is left to BullMQ,
      // whose stalled check hands it out again once its lock expires. Failing it instead would record a
      // failure for a delivery that was never attempted.
      const moved = await job.moveToDelayed(Date.now() + PARK_FALLBACK_MS, token).then(() => true, () => false);
      if (moved) await limit.parked(to, jobId);
      throw new DelayedError();
    }
    try {
      await attemptJob(job);
    } finally {
      if (to !== undefined) limit.release(to);
    }
  }

  async function attemptJob(job: Job<DeliveryJobData>): Promise<void> {
    const jobId = job.id!;
    const { id } = job.data;
    attempting++;
    try {
      // Pending, or delivering already (the worker that began it died: the attempt is made again). A
      // stale job, whose delivery finished or was redelivered under a newer job, sends nothing.
      const begun = await records.begin(id, jobId);
      if (!begun) return;
      take({ record: begun, gone: [] });
      const { attempt, outcome } = await attemptDelivery(begun, attemptOptions);
      let delay: number | undefined;
      let applied = false;
      const done = await records.update(id, (r) => {
        const attempts = r.attempts.concat([attempt]);
        // Another worker ended this round first (this one had lost its lock): keep the attempt, not its verdict.
        applied = r.job === jobId && r.state === 'delivering';
        if (!applied) return { ...r, attempts };
        delay = nextDelay({ ...r, attempts }, outcome, retrySchedule);
        const state = outcome === 'delivered' ? 'delivered' : delay === undefined ? 'failed' : 'pending';
        return { ...r, attempts, state, nextAttemptAt: delay === undefined || state !== 'pending' ? null : clock.now() + delay };
      }, begun);
      if (!done) return;
      take(done);
      moving.add(jobId);
      emit('attempt', done.record, attempt);
      const { state } = done.record;
      if (!applied) return;
      if (state === 'delivered') return void emit('delivered', done.record);
      const reason = attempt.status === null ? (attempt.error ?? 'no reply') : `HTTP ${attempt.status}`;
      if (state === 'failed') {
        emit('failed', done.record);
        throw verdict(new UnrecoverableError(`failed after ${reason}`));
      }
      throw verdict(new RetryLaterError(delay!, reason));
    } finally {
      attempting--;
    }
  }

  function verdict(error: Error): Error {
    verdicts.add(error);
    return error;
  }

  const worker = new Worker(config.name, deliver, {
    connection,
    prefix: config.prefix,
    concurrency: options.concurrency,
    autorun: false,
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: MAX_STALLED,
    name: `${hostname()}:${process.pid}`,
    settings: {
      // The spec's schedule (or the emitter's `retrySchedule`): the attempt worked out its slot. Anything
      // else failed before the attempt was recorded (Redis went away), and waits for the slot of its count.
      backoffStrategy: (attemptsMade: number, _type?: string, error?: Error) =>
        error instanceof RetryLaterError ? error.delayMs : (retrySchedule[Math.min(attemptsMade, retrySchedule.length) - 1] ?? 1_000),
    },
  });
  worker.on('error', onError);
  const moved = (job: Job | undefined): void => {
    if (!job?.id) return;
    moving.delete(job.id);
    const record = deferred.get(job.id);
    deferred.delete(job.id);
    if (record) promote(record);
  };
  worker.on('completed', moved);
  worker.on('failed', (job, error) => {
    moved(job);
    if (job && !verdicts.has(error) && !/stalled|lock/i.test(error.message)) {
      logger.warn(`the attempt of delivery ${(job.data as { id?: string })?.id} could not be begun or recorded; BullMQ retries it`, { error: error.message });
    }
  });
  try {
    await worker.waitUntilReady();
  } catch (error) {
    await worker.close().catch(() => undefined);
    attemptOptions.close();
    throw error;
  }
  return {
    get attempting() {
      return attempting;
    },
    defer(record) {
      if (!moving.has(record.job)) return false;
      deferred.set(record.job, record);
      return true;
    },
    run() {
      worker.run().catch(onError);
    },
    async close(force = false) {
      limit.close();
      try {
        // BullMQ's close() can wait forever on a blocking connection caught reconnecting, as after a Redis
        // restart (taskforcesh/bullmq#4656): the graceful close gets as long as an attempt in flight may
        // take (2 s with none), then the worker's connections are cut. Its jobs still active in Redis go to another worker once their
        // lock expires, so nothing is lost either way.
        if (!(await within(worker.close(force), (attempting > 0 && !force ? options.timeoutMs : 0) + 2_000))) {
          logger.warn('the BullMQ worker did not close in time; its connections were cut');
          await within(
            (worker as unknown as { blockingConnection?: { close(force?: boolean): Promise<void> } }).blockingConnection?.close(true) ?? Promise.resolve(),
            2_000,
          );
          await within(worker.disconnect(), 2_000);
        }
      } finally {
        moving.clear();
        deferred.clear();
        attemptOptions.close();
      }
    },
  };
}

/** Whether `work` settles within `ms` (a rejection counts as settled); the timer does not hold the process. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([work.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
