import type { ProblemCode } from '../../../protocol/problem.js';
import type { ImageCommand } from '../../contract/images.js';
import { LIMITS } from '../../contract/limits.js';
import { ServiceError } from '../../contract/problems.js';
import type { Credits } from '../../core/credits.js';
import type { Caller } from '../../core/gate.js';
import { insufficient } from '../../core/gate.js';
import type { ServiceStore } from '../../core/store.js';
import type { References } from '../references.js';
import type { ImageFiles } from './characters.js';
import type { ImageJobs } from './jobs.js';
import type { ImageJob, ImageJobTables } from './job.js';
import { imageJobView } from './views.js';
import type { Site } from '../../core/site.js';

/**
 * Request-level `simulate:<code>` markers of an image description (spec 4.7's 422s and 503s), answered
 * before anything is reserved. Parsed here, not by `parseSimulation`: those are clip codes, and a bare
 * `simulate:upstream_busy` there means a clip that ends in error. `simulate:request:<code>` works too.
 */
const SIMULATED: Partial<Record<ProblemCode, string>> = {
  prompt_blocked: 'The description asks for something images are not made of; change it.',
  document_blocked: 'Images do not reproduce identity documents, money or official papers.',
  religious_text: 'Images do not draw religious text.',
  minor_blocked: 'Images do not show minors.',
  photo_rejected: 'A photo failed moderation; send another photo.',
  upstream_busy: 'The image service is busy; nothing was reserved. Try again shortly.',
  generation_paused: 'Image generation is paused; nothing was reserved. Try again later.',
  moderation_pending: 'Checking the photos takes longer than usual; nothing was reserved. Use the asset_ids when they are trusted.',
};
const MARKER = new RegExp(`(?:^|\\s)simulate:(?:request:)?(${Object.keys(SIMULATED).join('|')})(?!\\S)`);

/** The refusal a description's request-level marker asks for, or `null`. */
function simulated(description: string): ServiceError | null {
  const code = MARKER.exec(description)?.[1] as ProblemCode | undefined;
  if (!code) return null;
  const busy = code === 'upstream_busy' || code === 'generation_paused' || code === 'moderation_pending';
  return new ServiceError(code, SIMULATED[code]!, {
    ...(busy ? { retryAfter: 5 } : {}),
    extra: { ...(code === 'photo_rejected' ? { reason_code: 'simulated' } : {}), ...(code === 'moderation_pending' ? { asset_ids: [] } : {}) },
  });
}

export interface ImageCommandsOptions {
  store: ServiceStore<ImageJobTables>;
  jobs: ImageJobs;
  files: ImageFiles;
  references: References;
  credits: Credits;
  clock: { now(): number };
  site: Site;
}

/** The commands of spec 4.7-4.11 on image jobs: typed input, typed answers, a `ServiceError` for every refusal. */
export class ImageCommands {
  readonly #options: ImageCommandsOptions;

  constructor(options: ImageCommandsOptions) {
    this.#options = options;
  }

  /**
   * POST /images (spec 4.7, 3.3): the job, `generating`, its credits reserved. After the contract's checks:
   * the photos (400 invalid_asset_id, invalid_image_url; 422 image_fetch_failed), request-level `simulate:`
   * markers (422, 503), the job limits (429 concurrency_limit, rate_limited), the balance (402). Nothing is
   * reserved by a refusal.
   */
  async create(caller: Caller, command: ImageCommand) {
    const { references, jobs, credits } = this.#options;
    references.assetIds(caller.account.id, command.assetIds);
    const linked = await references.imageUrls(caller.account.id, command.imageUrls);
    const refusal = simulated(command.description);
    if (refusal) throw refusal;
    const limit = jobs.limit(caller.account.id);
    if (limit) {
      const detail = limit.code === 'concurrency_limit' ? `At most ${LIMITS.concurrentImageJobs} image jobs run at once per account.` : `At most ${LIMITS.imageJobsPerWindow} image jobs per ${LIMITS.imageJobWindowMs / 60_000} minutes per account.`;
      throw new ServiceError(limit.code, detail, { retryAfter: limit.retryAfter });
    }
    if (credits.charge(caller.account, command.price)) throw insufficient(caller.account, command.price);
    // The consent that counts for `animate` (spec 2.7) is the request's, else the one recorded with its photos.
    const photoConsent = command.subjectConsent ?? references.recordedConsent(caller.account.id, [...command.assetIds, ...linked.assetIds]);
    return this.view(jobs.start(caller.account, caller.key.id, command, { photoConsent }));
  }

  /** GET /images/{id} (spec 4.10): the job, after waiting up to `waitMs` (on the simulated clock) for it to end. */
  async get(caller: Caller, id: number, { waitMs = 0 }: { waitMs?: number } = {}) {
    return this.view(await this.#options.jobs.waitFor(this.own(caller, id), waitMs));
  }

  /**
   * GET /images (spec 4.9): newest first, older than the `before` cursor. The envelope is not shown by the
   * spec: `{ data, next_before }`, `next_before` the last job's id when older jobs remain, else null.
   */
  list(caller: Caller, { limit, before }: { limit: number; before?: number | undefined }) {
    // One more than the page tells whether older jobs remain.
    const jobs = this.#options.jobs.list(caller.account.id, { limit: limit + 1, before: before ?? null });
    const page = jobs.slice(0, limit);
    return { data: page.map((job) => this.view(job)), next_before: jobs.length > limit ? page[page.length - 1]!.id : null };
  }

  /**
   * DELETE /images/{id} (spec 4.11): the job's image files go (their links stop working), and a character's
   * photos stop being assets; no refund.
   */
  async remove(caller: Caller, id: number) {
    const job = this.own(caller, id);
    const count = job.images.length;
    const dropFiles = this.#options.files.purge(job);
    // The files go once the deletion is saved: a deletion taken back (a failed write) keeps working links.
    await this.#options.store.commit();
    dropFiles();
    return { id: job.id, deleted: true, images_deleted: count };
  }

  /** The file behind an image's `url` or `thumbnail_url` (spec 2.7), or `null` once deleted. */
  file(name: string): { path: string; mime: string } | null {
    return this.#options.files.file(name);
  }

  /** The caller's job, or the 404 of spec 4.10: unknown ids and other accounts' look the same. */
  own(caller: Caller, id: number): ImageJob {
    const job = this.#options.jobs.get(caller.account.id, id);
    if (!job) throw new ServiceError('not_found', `No image job ${id}.`);
    return job;
  }

  /** A job as spec 2.7 shows it, with the seconds until it is expected to end. */
  view(job: ImageJob) {
    const estimate = job.status === 'generating' ? Math.max(0, Math.ceil((job.plan.endAt - this.#options.clock.now()) / 1000)) : 0;
    return imageJobView(job, this.#options.site.origin, estimate);
  }
}
