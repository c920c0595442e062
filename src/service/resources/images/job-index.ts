import type { Table } from '../../core/store.js';

// Issue 29 follow-up item 2: a file link was found by scanning every image job, and an account's list and
// limits read every account's jobs. These indexes make each a lookup; `ImageJobs` keeps them in step with
// the rows (a job made, its images made or deleted) and rebuilds them when rows change beside it (a
// rollback, an account deleted, a reset). A lookup checks the row, so an entry left stale answers nothing.

/** What the index reads of an image job (jobs.ts's `ImageJob`; named here so this module imports nothing of it). */
export interface IndexedJob {
  id: number;
  accountId: number;
  images: ReadonlyArray<{ token: string; thumbToken: string }>;
}

/** The job of each image file token, and each account's job ids, over the `image_job` table. */
export class ImageJobIndex<ImageJob extends IndexedJob> {
  readonly #jobs: Table<ImageJob>;
  readonly #byToken = new Map<string, number>();
  readonly #byAccount = new Map<number, Set<number>>();

  constructor(jobs: Table<ImageJob>) {
    this.#jobs = jobs;
    this.rebuild();
  }

  /** The job whose images include the file token `token` (an image's or its thumbnail's), while the job has it. */
  byToken(token: string): ImageJob | undefined {
    const id = this.#byToken.get(token);
    const job = id === undefined ? undefined : this.#jobs.get(id);
    return job?.images.some((image) => image.token === token || image.thumbToken === token) ? job : undefined;
  }

  /** The account's jobs, oldest first. */
  of(accountId: number): ImageJob[] {
    const jobs: ImageJob[] = [];
    for (const id of this.#byAccount.get(accountId) ?? []) {
      const job = this.#jobs.get(id);
      if (job?.accountId === accountId) jobs.push(job);
    }
    return jobs;
  }

  /** Files a job under its account and its images' tokens (a new job, or one whose images were just made). */
  add(job: ImageJob): void {
    let ids = this.#byAccount.get(job.accountId);
    if (!ids) this.#byAccount.set(job.accountId, (ids = new Set()));
    ids.add(job.id);
    for (const image of job.images) {
      this.#byToken.set(image.token, job.id);
      this.#byToken.set(image.thumbToken, job.id);
    }
  }

  /** Forgets a job's image tokens (its images are being deleted). */
  dropImages(job: ImageJob): void {
    for (const image of job.images) {
      if (this.#byToken.get(image.token) === job.id) this.#byToken.delete(image.token);
      if (this.#byToken.get(image.thumbToken) === job.id) this.#byToken.delete(image.thumbToken);
    }
  }

  /** Made again from the rows: after rows changed beside the jobs. Its cost is the rows'; it runs on those rare paths only. */
  rebuild(): void {
    this.#byToken.clear();
    this.#byAccount.clear();
    for (const job of this.#jobs.values()) this.add(job);
  }
}
