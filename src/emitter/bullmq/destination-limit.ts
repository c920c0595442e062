import type { Redis } from 'ioredis';

/** Where parked job ids wait, per destination, oldest first: shared by every worker of the queue. */
export interface ParkedJobs {
  /** Lists a job; one listed already keeps its place. */
  push(destination: string, jobId: string): Promise<void>;
  /** The oldest parked job of `destination`, taken off the list; `null` when none is left. */
  shift(destination: string): Promise<string | null>;
}

/**
 * The parked job ids of a queue in Redis: a sorted set per destination under `base`, by the time each was
 * first parked (a job parked again keeps its place, and is listed once). A set lives twice as long as a
 * parked job stays delayed after its last push: past that, every job in it has come back by itself.
 */
export function redisParkedJobs(redis: Redis, base: string, fallbackMs: number): ParkedJobs {
  return {
    async push(destination, jobId) {
      const key = `${base}:${destination}`;
      await redis.multi().zadd(key, 'NX', Date.now(), jobId).pexpire(key, fallbackMs * 2).exec();
    },
    async shift(destination) {
      const [jobId] = await redis.zpopmin(`${base}:${destination}`);
      return jobId ?? null;
    },
  };
}

/**
 * The per-destination cap of one BullMQ worker. BullMQ takes jobs in the order they were queued and has
 * no per-group limit outside BullMQ Pro, so a job whose destination is at its cap in this worker is
 * parked: moved back to BullMQ's delayed set (its slot goes to the next job) and its id listed in Redis;
 * each attempt to that destination that ends, in any worker, brings the oldest parked one back to the
 * waiting list. A parked job nothing brings back comes back by itself when its delay runs out.
 */
export class DestinationLimit {
  readonly #cap: number;
  readonly #parked: ParkedJobs;
  readonly #wake: (jobId: string) => Promise<boolean>;
  readonly #running = new Map<string, number>();
  #closed = false;

  /**
   * `wake` moves a parked job back to the waiting list; it resolves `false` when that job is no longer
   * delayed (redelivered, finished, or brought back already), and the next one is tried.
   */
  constructor(cap: number, parked: ParkedJobs, wake: (jobId: string) => Promise<boolean>) {
    this.#cap = cap;
    this.#parked = parked;
    this.#wake = wake;
  }

  /** Takes a slot of `destination` for an attempt; `false` when it is at its cap (park the job). */
  take(destination: string): boolean {
    const running = this.#running.get(destination) ?? 0;
    if (running >= this.#cap) return false;
    this.#running.set(destination, running + 1);
    return true;
  }

  /** Lists a job that was moved to the delayed set while its destination was at its cap here. */
  async parked(destination: string, jobId: string): Promise<void> {
    // Unlisted (Redis out of reach), the job still comes back by itself when its delay runs out.
    if (!(await this.#parked.push(destination, jobId).then(() => true, () => false))) return;
    // An attempt that ended here while the job was being parked found nothing to bring back.
    if ((this.#running.get(destination) ?? 0) < this.#cap) void this.#wakeOne(destination);
  }

  /** Gives back the slot of an attempt that ended, and brings back the destination's oldest parked job. */
  release(destination: string): void {
    const running = (this.#running.get(destination) ?? 1) - 1;
    if (running > 0) this.#running.set(destination, running);
    else this.#running.delete(destination);
    void this.#wakeOne(destination);
  }

  /** Stops bringing parked jobs back: a closing worker takes no more, and the others still do. */
  close(): void {
    this.#closed = true;
  }

  async #wakeOne(destination: string): Promise<void> {
    try {
      while (!this.#closed) {
        const jobId = await this.#parked.shift(destination);
        if (jobId === null || (await this.#wake(jobId))) return;
      }
    } catch {
      // Redis out of reach: the parked jobs come back by themselves.
    }
  }
}
