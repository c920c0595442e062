/**
 * Runs one write at a time, and lets every caller that arrives before a queued write has started share
 * that write: N concurrent commits cost at most two writes, and each caller resumes only after a write
 * that began after its call has finished. The write reads the owner's state when it starts, so every
 * change made before `commit()` was called is in it.
 */
export class GroupCommit {
  readonly #write: () => Promise<void>;
  /** The last write queued; each write waits for the one before it. */
  #tail: Promise<void> = Promise.resolve();
  /** A queued write that has not started yet: new callers join it. */
  #pending: Promise<void> | null = null;

  constructor(write: () => Promise<void>) {
    this.#write = write;
  }

  commit(): Promise<void> {
    if (this.#pending) return this.#pending;
    const run = this.#tail.then(async () => {
      // Yield once so callers in the same turn of the event loop join this write.
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.#pending = null;
      await this.#write();
    });
    this.#pending = run;
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every write queued so far has finished, whether it succeeded or not. */
  settled(): Promise<void> {
    return this.#tail;
  }
}
