import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProblemCode } from '../../protocol/problem.js';
import type { Asset } from '../resources/assets/assets.js';
import { removeAsset } from '../assets/operations.js';
import { createOnce, type Created, type CreateHooks } from '../create-once.js';
import { fail, ok, refused, type Result } from '../result.js';
import type { Caller, Service } from '../service.js';
import { CHARACTER_TRUST_MS, type ImageItem, type ImageJob } from '../resources/images/jobs.js';
import { validateImage, type ImageCommand } from './validate.js';
import { imageJobView } from '../resources/images/views.js';

/** Spec 4.9 and 8: the image job list pages 1-50 jobs, 20 by default; GET /images/{id} waits 0-30 s. */
export const IMAGE_PAGE = { min: 1, max: 50, default: 20 } as const;
export const MAX_WAIT_SECONDS = 30;

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

const MIME = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' } as const;

/** Seconds until a job is expected to end (spec 2.7 `estimated_time_seconds`); 0 once it has. */
const estimate = (service: Service, job: ImageJob): number => (job.status === 'generating' ? Math.max(0, Math.ceil((job.plan.endAt - service.clock.now()) / 1000)) : 0);
const view = (service: Service, job: ImageJob) => imageJobView(job, service.origin, estimate(service, job));

/** The problem a description's request-level marker asks for, or `null`. */
function simulatedProblem(description: string): Result | null {
  const code = MARKER.exec(description)?.[1] as ProblemCode | undefined;
  if (!code) return null;
  const busy = code === 'upstream_busy' || code === 'generation_paused' || code === 'moderation_pending';
  return fail(code, {
    detail: SIMULATED[code]!,
    ...(busy ? { retryAfter: 5 } : {}),
    extra: { ...(code === 'photo_rejected' ? { reason_code: 'simulated' } : {}), ...(code === 'moderation_pending' ? { asset_ids: [] } : {}) },
  });
}

/** Checks the photos (spec 4.7, 5): the caller's own usable assets, and external URLs downloaded as the service would. */
async function checkPhotos(service: Service, caller: Caller, command: ImageCommand): Promise<Result | null> {
  const usable = (id: number) => {
    const asset = service.assets.get(caller.account.id, id);
    return asset !== undefined && service.assets.usable(asset);
  };
  const bad = command.assetIds.find((id) => !usable(id));
  if (bad !== undefined) return fail('invalid_asset_id', { detail: `Asset ${bad} is not yours, or not moderated yet.` });
  for (const [index, url] of command.imageUrls.entries()) {
    const asset = /^asset:\/\/(\d+)$/.exec(url);
    if (asset) {
      if (!usable(Number(asset[1]))) return fail('invalid_image_url', { detail: `image_urls[${index}]: ${url} is not one of your moderated assets.` });
      continue;
    }
    // The caller's own character photo needs no download: it is a trusted asset already (spec 2.7).
    if (characterAsset(service, caller.account.id, url) || !service.fetchImage) continue;
    const fetched = await service.fetchImage(url, { strict: service.strict });
    if (!fetched.ok) return fail(fetched.code, { detail: `image_urls[${index}]: ${fetched.detail}` });
  }
  return null;
}

/**
 * POST /images (spec 4.7, 3.3): 202 with the job `generating` and its credits reserved. Checks, in order:
 * Idempotency-Key, the body (`validateImage`), the photos, request-level `simulate:` markers (422
 * prompt_blocked, document_blocked, religious_text, minor_blocked, photo_rejected; 503 upstream_busy,
 * generation_paused, moderation_pending with Retry-After), the job limits (429), the balance (402).
 * Nothing is reserved by a refusal.
 * @example await createImage(service, caller, { template: 'poster', fields: { headline: 'Open' } }, 'key-1') // { status: 202, body: { object: 'image_job', status: 'generating', … } }
 */
export function createImage(service: Service, caller: Caller, body: unknown, idempotencyKey?: string | string[], hooks: CreateHooks = {}): Promise<Result> {
  return createOnce(service, caller, idempotencyKey, '/v1/images', body, async (): Promise<Created> => {
    const validated = validateImage(body);
    if (!validated.ok) return { result: refused(validated.refusal) };
    const command = validated.value;
    const photos = await checkPhotos(service, caller, command);
    if (photos) return { result: photos };
    const simulated = simulatedProblem(command.description);
    if (simulated) return { result: simulated };
    const limit = service.images.limit(caller.account.id);
    if (limit) {
      const detail = limit.code === 'concurrency_limit' ? 'At most 3 image jobs run at once per account.' : 'At most 30 image jobs per 10 minutes per account.';
      return { result: fail(limit.code, { detail, retryAfter: limit.retryAfter }) };
    }
    if (service.credits.charge(caller.account, command.price)) return { result: service.insufficient(caller.account, command.price) };
    const job = service.images.start(caller.account, caller.key.id, command);
    return { result: ok(202, view(service, job)) };
  }, hooks);
}

/** The caller's job `id` (a path segment), or the 404 of spec 4.10: unknown ids and other accounts' look the same. */
function own(service: Service, caller: Caller, id: string): ImageJob | Result {
  const job = /^[1-9]\d{0,15}$/.test(id) ? service.images.get(caller.account.id, Number(id)) : undefined;
  return job ?? fail('not_found', { detail: `No image job ${id}.` });
}

const isResult = (value: ImageJob | Result): value is Result => !('command' in value);

/**
 * GET /images/{id} (spec 4.10): the job, after waiting up to `wait` seconds (0-30, on the simulated clock)
 * for it to end.
 * @example await getImage(service, caller, '1', { wait: '30' }) // resolves as soon as job 1 ends
 */
export async function getImage(service: Service, caller: Caller, id: string, query: Record<string, unknown> = {}): Promise<Result> {
  const wait = integer(query.wait, 0, 0, MAX_WAIT_SECONDS);
  if (wait === null) return fail('invalid_parameter', { detail: `wait is an integer from 0 to ${MAX_WAIT_SECONDS} (seconds).` });
  const job = own(service, caller, id);
  if (isResult(job)) return job;
  return ok(200, view(service, await service.images.waitFor(job, wait * 1000)));
}

/**
 * GET /images (spec 4.9): the caller's jobs, newest first, `limit` 1-50 (20), older than the `before`
 * cursor. The envelope is not shown by the spec: `{ data, next_before }`, where `next_before` is the last
 * job's id when older jobs remain, else `null` (so a client never fetches an empty last page).
 * @example listImages(service, caller, { limit: '2', before: '5' }) // { status: 200, body: { data: [job 4, job 3], next_before: 3 } }
 */
export function listImages(service: Service, caller: Caller, query: Record<string, unknown>): Result {
  const limit = integer(query.limit, IMAGE_PAGE.default, IMAGE_PAGE.min, IMAGE_PAGE.max);
  if (limit === null) return fail('invalid_parameter', { detail: `limit is an integer from ${IMAGE_PAGE.min} to ${IMAGE_PAGE.max}.` });
  const before = integer(query.before, 0, 1, Number.MAX_SAFE_INTEGER);
  if (before === null) return fail('invalid_parameter', { detail: 'before is a job id (an integer >= 1) taken from next_before.' });
  // One more than the page tells whether older jobs remain.
  const jobs = service.images.list(caller.account.id, { limit: limit + 1, before: before || null });
  const page = jobs.slice(0, limit);
  return ok(200, { data: page.map((job) => view(service, job)), next_before: jobs.length > limit ? page[page.length - 1]!.id : null });
}

/**
 * DELETE /images/{id} (spec 4.11): the job's image files go (their links stop working), and a character's
 * photos stop being assets; no refund. A job still generating loses its images as soon as it ends.
 * @example await deleteImage(service, caller, '1') // { status: 200, body: { id: 1, deleted: true, images_deleted: 4 } }
 */
export async function deleteImage(service: Service, caller: Caller, id: string): Promise<Result> {
  const job = own(service, caller, id);
  if (isResult(job)) return job;
  const count = job.images.length;
  const dropFiles = purge(service, job);
  if (job.status === 'generating') purgeWhenEnded(service, job);
  // The files go once the deletion is saved: a deletion taken back (a failed write) keeps working links.
  await service.store.commit();
  dropFiles?.();
  return ok(200, { id: job.id, deleted: true, images_deleted: count });
}

/** Where an image's file is kept, by the extension it was saved with (render.ts: png with text, else jpg). */
function imagePath(service: Service, image: ImageItem): { path: string; ext: 'png' | 'jpg' } {
  const ext = image.format === 'png' ? 'png' : 'jpg';
  return { path: join(service.filesDir, 'images', `${image.token}.${ext}`), ext };
}

/**
 * Takes a job's images and the character assets made of them off the job; returns what removes their
 * files, to run once that is saved, or `null` when there was nothing to remove.
 */
function purge(service: Service, job: ImageJob): (() => void) | null {
  if (job.images.length === 0) {
    service.images.deleteImages(job);
    return null;
  }
  const files = job.images.flatMap((image) => [imagePath(service, image).path, join(service.filesDir, 'images', `${image.thumbToken}.webp`)]);
  const assets = job.images.flatMap((image) => {
    const asset = image.assetId === null ? undefined : service.assets.get(job.accountId, image.assetId);
    return asset ? [removeAsset(service, asset)] : [];
  });
  service.images.deleteImages(job);
  return () => {
    for (const file of files) rmSync(file, { force: true });
    for (const dropFile of assets) dropFile();
  };
}

/** `purge` for work no request waits on (a job that ended): its files go at once. */
function purgeNow(service: Service, job: ImageJob): boolean {
  const dropFiles = purge(service, job);
  dropFiles?.();
  return dropFiles !== null;
}

const purging = new WeakSet<ImageJob>();

/** ImageJobs.#finish sets the images of a job even if they were deleted while it ran: they go once it ends. */
function purgeWhenEnded(service: Service, job: ImageJob): void {
  if (purging.has(job)) return;
  purging.add(job);
  const ended = (done: ImageJob) => {
    if (done.id !== job.id) return;
    service.images.off('ended', ended);
    purging.delete(job);
    if (purgeNow(service, done)) void service.store.commit().catch(() => undefined);
  };
  service.images.on('ended', ended);
}

/**
 * Makes the photos of an ended character job trusted assets (spec 2.7: `animate` trusted, usable as a clip
 * reference until `trusted_until`, 30 days): each file is hashed and kept once per sha256 as uploads are.
 * Synchronous, so a GET /images/{id}?wait woken by the same `ended` event already sees the assets.
 */
function adoptCharacter(service: Service, job: ImageJob): boolean {
  if (job.command.type !== 'character' || job.status === 'generating' || job.imagesDeleted) return false;
  let changed = false;
  for (const [index, image] of job.images.entries()) {
    // Set once: a photo whose asset the caller deleted is not made an asset again.
    if (image.assetId !== null) continue;
    const { path, ext } = imagePath(service, image);
    const bytes = readFileSync(path);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const target = service.assetPath(sha256, ext);
    if (!existsSync(target)) {
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
      copyFileSync(path, target);
    }
    const trustedUntil = image.trustedUntil ?? (job.completedAt ?? job.plan.endAt) + CHARACTER_TRUST_MS;
    const asset = service.assets.addTrusted({ accountId: job.accountId, sha256, name: `character-${job.id}-${index + 1}.${ext}`, fileSize: bytes.length, mimeType: MIME[ext], ext, trustedUntil });
    image.assetId = asset.id;
    changed = true;
  }
  if (changed) service.store.table('image_job').put(job);
  return changed;
}

/**
 * Attaches what must happen when an image job ends: a character's photos become trusted assets, and a job
 * deleted while it ran loses its images. Also settles the jobs that ended before a restart. The service
 * calls it once when it opens; returns a function that detaches it.
 * @example
 * const service = await Service.open();
 * registerCharacterAssets(service);
 */
export function registerCharacterAssets(service: Service, { onError = (error: Error) => console.warn(`cliphook serve: ${error.message}`) }: { onError?: (error: Error) => void } = {}): () => void {
  const settle = (job: ImageJob) => {
    try {
      const changed = job.imagesDeleted ? purgeNow(service, job) : adoptCharacter(service, job);
      if (changed) service.store.commit().catch(onError);
    } catch (error) {
      onError(new Error(`cannot keep the photos of image job ${job.id} as assets: ${(error as Error).message}`));
    }
  };
  for (const job of [...service.store.table('image_job').values()]) if (job.status !== 'generating') settle(job);
  service.images.on('ended', settle);
  return () => void service.images.off('ended', settle);
}

/** The image a file name `<token>.<ext>` (or a bare token) names, with its file, or `undefined`. */
function findImage(service: Service, name: string): { job: ImageJob; image: ImageItem; path: string; mime: string } | undefined {
  const match = /^([A-Za-z0-9_-]{1,64})(?:\.(png|jpg|webp))?$/.exec(name);
  if (!match) return undefined;
  const [, token, ext] = match;
  for (const job of service.store.table('image_job').values()) {
    for (const image of job.images) {
      const file = imagePath(service, image);
      if (image.token === token && (ext === undefined || ext === file.ext)) return { job, image, path: file.path, mime: MIME[file.ext] };
      if (image.thumbToken === token && (ext === undefined || ext === 'webp')) return { job, image, path: join(service.filesDir, 'images', `${token}.webp`), mime: MIME.webp };
    }
  }
  return undefined;
}

/**
 * The file behind an image's `url` or `thumbnail_url`, `/files/images/<token>.<ext>` (spec 2.7): no key,
 * the unguessable token is the credential. `null` once the job's images are deleted.
 * @example imageFile(service, 'q9X….jpg') // { path: '…/images/q9X….jpg', mime: 'image/jpeg' }
 */
export function imageFile(service: Service, token: string): { path: string; mime: string } | null {
  const found = findImage(service, token);
  return found && existsSync(found.path) ? { path: found.path, mime: found.mime } : null;
}

/**
 * The trusted asset of the account's character photo behind `url` (this service's image link), while it
 * is usable: what POST /videos can take in image_urls with subject_consent no_real_person (spec 2.7).
 * @example characterAsset(service, caller.account.id, job.images[0].url)?.id // 7
 */
export function characterAsset(service: Service, accountId: number, url: string): Asset | undefined {
  const prefix = `${service.origin}/files/images/`;
  const found = url.startsWith(prefix) ? findImage(service, url.slice(prefix.length)) : undefined;
  if (!found || found.job.accountId !== accountId) return undefined;
  const asset = found.image.assetId === null ? undefined : service.assets.get(accountId, found.image.assetId);
  return asset && service.assets.usable(asset) ? asset : undefined;
}

/** A query integer within bounds, its default when absent, or `null` when it is not one. */
function integer(value: unknown, fallback: number, min: number, max: number): number | null {
  if (value === undefined || value === '') return fallback;
  // A string from a query, or a number from the assistant's tools.
  if (!(typeof value === 'string' && /^\d{1,16}$/.test(value)) && !Number.isSafeInteger(value)) return null;
  const number = Number(value);
  return number >= min && number <= max ? number : null;
}
