// Spec 2.7, 3.3: an image job, its row and the rules read off it (its statuses, its images' `animate`,
// the limits of spec 8, a description's simulate: markers). The state machine that moves it is jobs.ts.
import { IMAGE_ERROR_CODES, type ANIMATE_VALUES, type IMAGE_JOB_STATUSES, type ImageCommand, type ImageErrorCode } from '../../contract/images.js';
import { LIMITS } from '../../contract/limits.js';
import type { SubjectConsent } from '../../contract/common.js';

/** Spec 2.7 and 3.3. */
export type ImageJobStatus = (typeof IMAGE_JOB_STATUSES)[number];

/** Spec 2.10. */
export { IMAGE_ERROR_CODES, type ImageErrorCode };

/** Spec 2.7 `animate`: whether an image can become a clip. */
export type Animate = (typeof ANIMATE_VALUES)[number];

/** One made image: its files are named by unguessable tokens (spec 2.7: a permanent unguessable link). */
export interface ImageItem {
  id: number;
  token: string;
  thumbToken: string;
  width: number;
  height: number;
  format: 'png' | 'jpeg';
  animate: Animate;
  trustedUntil: number | null;
  /** The character photo's asset, usable in POST /videos image_urls. */
  assetId: number | null;
}

export interface ImageJob {
  id: number;
  accountId: number;
  keyId: string;
  status: ImageJobStatus;
  command: ImageCommand;
  creditsReserved: number;
  creditsCharged: number | null;
  creditsRefunded: number;
  images: ImageItem[];
  /** DELETE /images/{id} removed the files (spec 4.11). */
  imagesDeleted: boolean;
  errorCode: ImageErrorCode | null;
  createdAt: number;
  completedAt: number | null;
  /** The consent that counts for `animate`: the request's, else the one recorded with its photos (absent in older files). */
  photoConsent?: SubjectConsent | null;
  /** When it ends and how many of its images can be made, fixed at creation so a restart resumes the plan. */
  plan: { endAt: number; make: number; failWith: ImageErrorCode | null };
}

export interface ImageJobTables {
  image_job: ImageJob;
}

/** What makes the files of one image; the real one draws with sharp, tests pass a fake. */
export interface ImageRenderer {
  render(job: ImageJob, index: number): Promise<Omit<ImageItem, 'id' | 'animate' | 'trustedUntil' | 'assetId'> & { assetId?: number | null }>;
  /** Removes the files of images made for a job that then failed. */
  discard?(images: readonly Pick<ImageItem, 'token' | 'thumbToken' | 'format'>[]): Promise<void>;
}

/** Spec 8: 3 image jobs at once per account, 30 per 10 minutes. */
export const MAX_CONCURRENT_JOBS = LIMITS.concurrentImageJobs;
export const MAX_JOBS_PER_WINDOW = LIMITS.imageJobsPerWindow;
export const JOB_WINDOW_MS = LIMITS.imageJobWindowMs;
/** Spec 2.7: a character photo is trusted for 30 days. */
export const CHARACTER_TRUST_MS = LIMITS.characterTrustMs;

/** `simulate:fail:<error_code>` and `simulate:partial` in a description. */
export function parseImageSimulation(description: string): { failWith: ImageErrorCode } | { partial: true } | null {
  const fail = /(?:^|\s)simulate:fail:([a-z_]+)(?!\S)/.exec(description);
  if (fail && (IMAGE_ERROR_CODES as readonly string[]).includes(fail[1]!)) return { failWith: fail[1] as ImageErrorCode };
  return /(?:^|\s)simulate:partial(?!\S)/.test(description) ? { partial: true } : null;
}

/** Spec 2.7's meanings of `animate` for an image that is not a character. */
export function animateOf(command: ImageCommand, photoConsent: SubjectConsent | null = command.subjectConsent): Animate {
  const photos = command.assetIds.length + command.imageUrls.length > 0;
  if (photos) return photoConsent === 'permission' ? 'no' : 'ok';
  if (command.template && command.template !== 'poster') return 'ok';
  return /\b(person|people|man|woman|men|women|boy|girl|child|kid|face|portrait|family|couple|crowd)s?\b/i.test(command.description) ? 'maybe' : 'ok';
}
