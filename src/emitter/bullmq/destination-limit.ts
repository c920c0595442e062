/**
 * The per-destination cap of one BullMQ worker. BullMQ takes jobs in the order they were queued and has
 * no per-group limit outside BullMQ Pro, so a job whose destination is at its cap is parked: moved back
 * to BullMQ's delayed set (its slot goes to the next job) and remembered here; each attempt that ends
 * brings that destination's oldest parked job back to the waiting list. A parked job this worker never
 * brings back (its process died) comes back by itself after `fallbackMs`.
 */
export class DestinationLimit {
  readonly #cap: number;
  readonly #wake: (jobId: string) => Promise<boolean>;
  readonly #running = new Map<string, number>();
  /** Parked job ids by destination, oldest first. */
  readonly #parked = new Map<string, Set<string>>();
  #closed = false;

  /**
   * `wake` moves a parked job back to the waiting list; it resolves `false` when that job is no longer
   * delayed (redelivered, finished, or brought back by another process), and the next one is tried.
   */
  constructor(cap: number, wake: (jobId: string) => Promise<boolean>) {
    this.#cap = cap;
    this.#wake = wake;
  }

  /** Takes a slot of `destination` for an attempt; `false` when it is at its cap (park the job). */
  take(destination: string): boolean {
    const running = this.#running.get(destination) ?? 0;
    if (running >= this.#cap) return false;
    this.#running.set(destination, running + 1);
    return true;
  }

  /** Remembers a job that was moved to the delayed set while its destination was at its cap. */
  parked(destination: string, jobId: string): void {
    let jobs = this.#parked.get(destination);
    if (!jobs) this.#parked.set(destination, (jobs = new Set()));
    jobs.add(jobId);
    // An attempt that ended while the job was being parked found nothing to bring back.
    if ((this.#running.get(destination) ?? 0) < this.#cap) void this.#wakeOne(destination);
  }

  /** Gives back the slot of an attempt that ended, and brings back the destination's oldest parked job. */
  release(destination: string): void {
    const running = (this.#running.get(destination) ?? 1) - 1;
    if (running > 0) this.#running.set(destination, running);
    else this.#running.delete(destination);
    void this.#wakeOne(destination);
  }

  /** Stops bringing parked jobs back: a closing worker takes no more. They come back after `fallbackMs`. */
  close(): void {
    this.#closed = true;
    this.#parked.clear();
  }

  async #wakeOne(destination: string): Promise<void> {
    const jobs = this.#parked.get(destination);
    while (jobs && jobs.size > 0 && !this.#closed) {
      const jobId = jobs.values().next().value!;
      jobs.delete(jobId);
      if (jobs.size === 0) this.#parked.delete(destination);
      // A failure to reach Redis leaves the job delayed: it comes back by itself.
      if (await this.#wake(jobId).catch(() => false)) return;
    }
  }
}
