import { EventEmitter } from 'node:events';
import type { Account, Accounts } from '../../core/accounts.js';
import type { Credits } from '../../core/credits.js';
import { imageCharge } from '../../contract/pricing.js';
import { onTimeOf, type LaneClock } from '../../core/clock.js';
import type { ServiceStore, Table, TableIndex } from '../../core/store.js';
import type { Speed } from '../../core/simulate.js';
import type { ImageCommand, ImageErrorCode } from '../../contract/images.js';
import type { SubjectConsent } from '../../contract/common.js';
import { CHARACTER_TRUST_MS, JOB_WINDOW_MS, MAX_CONCURRENT_JOBS, MAX_JOBS_PER_WINDOW, animateOf, parseImageSimulation, type ImageItem, type ImageJob, type ImageJobStatus, type ImageJobTables, type ImageRenderer } from './job.js';

/** Spec 1: most images take 30-60 s, a character about 2 minutes; `--speed fast` a second or three. */
const DURATION_MS: Record<Speed, { image: [number, number]; character: [number, number] }> = {
  fast: { image: [1_000, 3_000], character: [2_000, 4_000] },
  realistic: { image: [30_000, 60_000], character: [100_000, 140_000] },
};

export interface ImageJobsOptions {
  accounts: Accounts;
  credits: Credits;
  renderer: ImageRenderer;
  clock: LaneClock;
  speed: Speed;
  /** @default Math.random */
  random?: () => number;
  /** Reports a job whose processing failed (it ends `failed`) or whose end could not be saved yet. */
  onError?: (error: Error) => void;
}

/** Why a new job must wait (spec 8): 429 with the seconds until it may start. */
export type JobLimit = { code: 'concurrency_limit' | 'rate_limited'; retryAfter: number };

/**
 * The image job state machine of spec 3.3: credits reserved at the start, `generating` until the planned
 * end, then `done`, `partial` (the unused part refunded) or `failed` (nothing charged). Limits of spec 8
 * on the simulated clock. `waitFor` wakes a waiter when the job ends (GET /images/{id}?wait).
 */
export class ImageJobs extends EventEmitter<{ ended: [job: ImageJob] }> {
  readonly #jobs: Table<ImageJob>;
  readonly #store: ServiceStore<ImageJobTables>;
  readonly #options: ImageJobsOptions;
  readonly #timers = new Map<number, unknown>();
  #nextImageId = 1;
  /** Jobs whose files are being made, with their account: `clock.advance()` waits for them (the service registers it). */
  readonly #rendering = new Map<number, number>();
  /**
   * Jobs by file token and by account, so a file link, a list and the limits read
   * no other account's jobs; indexes of the table, which keeps them in step.
   */
  readonly #byToken: TableIndex<ImageJob, string>;
  readonly #byAccount: TableIndex<ImageJob, number>;
  /** Jobs by the ids of the images they hold (image ids are the service's, unique across jobs). */
  readonly #byImage: TableIndex<ImageJob, number>;

  constructor(store: ServiceStore<ImageJobTables>, options: ImageJobsOptions) {
    super();
    this.#store = store;
    this.#jobs = store.table('image_job');
    this.#options = options;
    for (const job of this.#jobs.values()) for (const image of job.images) this.#nextImageId = Math.max(this.#nextImageId, image.id + 1);
    // An image's file token and its thumbnail's each find the job while it has the image (spec 4.11 deletes them).
    // Not `unique`: a renderer's tokens are its own, and a job's end must be saved whatever they are.
    // Only string tokens are links (a renderer's odd answer is no key the table refuses the job's end for).
    this.#byToken = this.#jobs.index('fileToken', (job) => (Array.isArray(job.images) ? job.images.flatMap((image) => [image.token, image.thumbToken]).filter((token) => typeof token === 'string') : undefined));
    this.#byAccount = this.#jobs.index('accountId', (job) => job.accountId);
    // Spec 4.11: a job whose images were deleted holds none that can be used.
    this.#byImage = this.#jobs.index('imageId', (job) => (Array.isArray(job.images) && !job.imagesDeleted ? job.images.map((image) => image.id).filter((id) => typeof id === 'number') : undefined));
    // A job removed beside it (its account deleted, its start taken back) takes its timer with it.
    this.#jobs.watch('timers', (id, row) => row === null && this.#disarm(id));
  }

  /** The job whose images include the file token `token` (an image's or its thumbnail's), while the job has it. */
  byToken(token: string): ImageJob | undefined {
    return this.#byToken.first(token);
  }

  get(accountId: number, id: number): ImageJob | undefined {
    const job = this.#jobs.get(id);
    return job && job.accountId === accountId ? job : undefined;
  }

  /** The account's image `imageId`, while its job holds it: a lookup, whatever the account's other jobs. */
  image(accountId: number, imageId: number): ImageItem | undefined {
    const job = this.#byImage.first(imageId);
    return job && job.accountId === accountId ? job.images.find((image) => image.id === imageId) : undefined;
  }

  /** The account's jobs, newest first, older than the `before` cursor (spec 4.9). */
  list(accountId: number, { limit, before }: { limit: number; before: number | null }): ImageJob[] {
    return this.#byAccount.get(accountId)
      .filter((job) => before === null || job.id < before)
      .sort((a, b) => b.id - a.id)
      .slice(0, limit);
  }

  /** Whether the account may start a job now (spec 8), checked before anything is reserved. */
  limit(accountId: number): JobLimit | null {
    const now = this.#options.clock.now();
    const mine = this.#byAccount.get(accountId);
    const running = mine.filter((job) => job.status === 'generating');
    if (running.length >= MAX_CONCURRENT_JOBS) {
      const soonest = Math.min(...running.map((job) => job.plan.endAt));
      return { code: 'concurrency_limit', retryAfter: Math.max(1, Math.ceil((soonest - now) / 1000)) };
    }
    const recent = mine.filter((job) => job.createdAt > now - JOB_WINDOW_MS).map((job) => job.createdAt).sort((a, b) => a - b);
    if (recent.length >= MAX_JOBS_PER_WINDOW) {
      const frees = recent[recent.length - MAX_JOBS_PER_WINDOW]! + JOB_WINDOW_MS;
      return { code: 'rate_limited', retryAfter: Math.max(1, Math.ceil((frees - now) / 1000)) };
    }
    return null;
  }

  /** Starts a job whose price the caller has just charged to `account` (spec 3.3: reserved). */
  start(account: Account, keyId: string, command: ImageCommand, { photoConsent = command.subjectConsent }: { photoConsent?: SubjectConsent | null } = {}): ImageJob {
    const now = this.#options.clock.now();
    const [low, high] = DURATION_MS[this.#options.speed][command.type];
    const simulation = parseImageSimulation(command.description);
    const failWith = simulation && 'failWith' in simulation ? simulation.failWith : null;
    const make = failWith ? 0 : simulation ? command.count - 1 : command.count;
    const job = this.#jobs.put({
      id: this.#store.nextId('image_job'),
      accountId: account.id,
      keyId,
      status: 'generating',
      command,
      photoConsent,
      creditsReserved: command.price,
      creditsCharged: null,
      creditsRefunded: 0,
      images: [],
      imagesDeleted: false,
      errorCode: null,
      createdAt: now,
      completedAt: null,
      // A job of one whose only image cannot be made has nothing to show: it fails as result_blocked (spec 3.3).
      plan: { endAt: now + Math.round(low + (high - low) * (this.#options.random ?? Math.random)()), make, failWith: failWith ?? (make === 0 ? 'result_blocked' : null) },
    });
    this.#arm(job);
    return job;
  }


  /**
   * A job made in any state by a seed fixture, charging nothing: a generating one ends on its
   * plan; a done or partial one has its `made` images rendered now (by `renderer`, default the service's); a failed one has none.
   */
  async seed(account: Account, keyId: string, command: ImageCommand, { status, made, errorCode, renderer }: { status: ImageJobStatus; made: number; errorCode: ImageErrorCode | null; renderer?: ImageRenderer }): Promise<ImageJob> {
    const job = this.start(account, keyId, { ...command, price: 0 });
    if (status === 'generating') return job;
    this.#options.clock.clearTimeout(this.#timers.get(job.id));
    this.#timers.delete(job.id);
    const now = this.#options.clock.now();
    job.plan = { endAt: now, make: status === 'failed' ? 0 : made, failWith: errorCode ?? (status === 'failed' ? 'failed' : null) };
    // A seed passes its own renderer, which draws each kind of picture once.
    const { refund: _refund, ...fields } = await this.#make(job, [], renderer);
    Object.assign(job, fields);
    return this.#jobs.put(job);
  }

  /** DELETE /images/{id} (spec 4.11): the images go, the job stays, nothing is refunded. */
  deleteImages(job: ImageJob): number {
    const count = job.images.length;
    job.images = [];
    job.imagesDeleted = true;
    this.#jobs.put(job);
    return count;
  }

  /** Resolves with the job once it has ended, or after `ms` (spec 4.10 `wait`), woken by the job. */
  waitFor(job: ImageJob, ms: number): Promise<ImageJob> {
    if (job.status !== 'generating' || ms <= 0) return Promise.resolve(job);
    return new Promise((resolve) => {
      const ended = (done: ImageJob) => {
        if (done.id !== job.id) return;
        this.off('ended', ended);
        this.#options.clock.clearTimeout(timer);
        resolve(done);
      };
      const timer = this.#options.clock.setTimeout(() => {
        this.off('ended', ended);
        resolve(job);
      }, ms);
      this.on('ended', ended);
    });
  }

  /** Whether a job's files are being made now. */
  get busy(): boolean {
    return this.#rendering.size > 0;
  }

  /** Whether a job of `account` is having its files made now (what its own advance waits for). */
  busyOf(account: number): boolean {
    for (const owner of this.#rendering.values()) if (owner === account) return true;
    return false;
  }

  resume(): void {
    for (const job of this.#jobs.values()) if (job.status === 'generating') this.#arm(job);
  }

  /** Brings the timers back in line with the rows after a request's changes were taken back (a job's start undone leaves none armed); the indexes are the table's. */
  resync(): void {
    for (const id of [...this.#timers.keys()]) if (this.#jobs.get(id)?.status !== 'generating') this.#disarm(id);
    this.resume();
  }

  #disarm(id: number): void {
    this.#options.clock.clearTimeout(this.#timers.get(id));
    this.#timers.delete(id);
  }

  stop(): void {
    for (const timer of this.#timers.values()) this.#options.clock.clearTimeout(timer);
    this.#timers.clear();
  }

  #arm(job: ImageJob): void {
    onTimeOf(this.#options.clock, job.accountId, () => this.#armNow(job));
  }

  #armNow(job: ImageJob): void {
    // A job whose images are being made is not armed again (a resync while it renders).
    if (this.#rendering.has(job.id)) return;
    this.#options.clock.clearTimeout(this.#timers.get(job.id));
    const endAt = Number.isFinite(job.plan?.endAt) ? job.plan.endAt : this.#options.clock.now();
    const timer = this.#options.clock.setTimeout(() => {
      this.#timers.delete(job.id);
      this.#rendering.set(job.id, job.accountId);
      void this.#finish(job)
        .catch((error: Error) => this.#options.onError?.(new Error(`image job ${job.id} could not end: ${error.message}`)))
        .finally(() => this.#rendering.delete(job.id));
    }, Math.max(0, endAt - this.#options.clock.now()));
    this.#timers.set(job.id, timer);
  }

  /**
   * Ends a job: its images made, then its state, refund and charge set in one synchronous step. Any failure
   * on the way (a photo that cannot be decoded, a file that cannot be written, a record an older version
   * left) ends it `failed` instead, with nothing charged (spec 2.10, 3.3): a job never stays `generating`
   * and never holds its reservation or a concurrency slot. The end is saved in the
   * background: a failed write stays queued and is written with the next commit.
   */
  async #finish(job: ImageJob): Promise<void> {
    const made: ImageItem[] = [];
    let end: Partial<ImageJob> & { refund: number };
    try {
      end = await this.#make(job, made);
    } catch (error) {
      this.#options.onError?.(new Error(`image job ${job.id} failed: ${(error as Error).message}`));
      await this.#options.renderer.discard?.(made).catch(() => undefined);
      end = { images: [], status: 'failed', errorCode: 'failed', creditsCharged: 0, creditsRefunded: job.creditsReserved, completedAt: this.#endOf(job), refund: job.creditsReserved };
    }
    // Its row went while it rendered (its account deleted): nothing to write back.
    if (this.#jobs.get(job.id) === undefined) {
      await this.#options.renderer.discard?.(end.images ?? []).catch(() => undefined);
      return;
    }
    const { refund, ...fields } = end;
    const account = this.#options.accounts.get(job.accountId);
    if (account && refund > 0) this.#options.credits.refund(account, refund);
    Object.assign(job, fields);
    this.#jobs.put(job);
    try {
      await this.#store.commit();
    } catch (error) {
      this.#options.onError?.(new Error(`cannot save the end of image job ${job.id} yet: ${(error as Error).message}`));
    }
    this.emit('ended', job);
  }

  /** Makes a job's images (pushed to `made` as they come) and says how it ends; throws when one cannot be made. */
  async #make(job: ImageJob, made: ImageItem[], renderer = this.#options.renderer): Promise<Partial<ImageJob> & { refund: number }> {
    const { make, failWith } = job.plan;
    // Images deleted while the job ran (spec 4.11: no refund) are made and charged, but never written.
    const keep = !job.imagesDeleted;
    for (let index = 0; index < make && keep; index++) {
      const rendered = await renderer.render(job, index);
      const character = job.command.type === 'character';
      made.push({
        ...rendered,
        id: this.#nextImageId++,
        animate: character ? 'trusted' : animateOf(job.command, job.photoConsent ?? job.command.subjectConsent),
        trustedUntil: character ? job.plan.endAt + CHARACTER_TRUST_MS : null,
        assetId: rendered.assetId ?? null,
      });
    }
    const count = keep ? made.length : make;
    const charged = imageCharge(job.creditsReserved, job.command.count, count);
    return {
      images: made,
      status: count === 0 ? 'failed' : count < job.command.count ? 'partial' : 'done',
      errorCode: count === 0 ? failWith ?? 'failed' : null,
      creditsCharged: charged,
      creditsRefunded: job.creditsReserved - charged,
      completedAt: job.plan.endAt,
      refund: job.creditsReserved - charged,
    };
  }

  /** When a job ended: its planned end, or now for a record without a usable plan. */
  #endOf(job: ImageJob): number {
    return Number.isFinite(job.plan?.endAt) ? job.plan.endAt : this.#options.clock.now();
  }
}
