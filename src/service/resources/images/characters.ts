import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import type { Files } from '../../core/files.js';
import type { ServiceStore } from '../../core/store.js';
import type { Asset, Assets } from '../assets/assets.js';
import type { AssetCommands } from '../assets/commands.js';
import { type ImageJobs } from './jobs.js';
import { CHARACTER_TRUST_MS, type ImageItem, type ImageJob, type ImageJobTables } from './job.js';
import type { Site } from '../../core/site.js';

const MIME = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' } as const;

export interface ImageFilesOptions {
  store: ServiceStore<ImageJobTables>;
  jobs: ImageJobs;
  assets: Assets;
  assetCommands: AssetCommands;
  files: Files;
  site: Site;
  onError: (error: Error) => void;
}

/**
 * The files of made images and what follows a job's end (spec 2.7 and 4.11): the unguessable file links, a
 * character's photos kept as trusted assets for 30 days, and a job's images removed once it was deleted.
 */
export class ImageFiles {
  readonly #options: ImageFilesOptions;
  readonly #detach: () => void;

  constructor(options: ImageFilesOptions) {
    this.#options = options;
    const settle = (job: ImageJob) => this.#settle(job);
    // Jobs that ended before a restart, then each as it ends.
    for (const job of [...options.store.table('image_job').values()]) if (job.status !== 'generating') settle(job);
    options.jobs.on('ended', settle);
    this.#detach = () => void options.jobs.off('ended', settle);
  }

  stop(): void {
    this.#detach();
  }

  /** Where an image's file is kept, by the extension it was saved with (render.ts: png with text, else jpg). */
  path(image: ImageItem): { path: string; ext: 'png' | 'jpg' } {
    const ext = image.format === 'png' ? 'png' : 'jpg';
    return { path: this.#options.files.image(image.token, ext), ext };
  }

  /**
   * The file behind an image's `url` or `thumbnail_url`, `/files/images/<token>.<ext>` (spec 2.7): the
   * unguessable token is the credential. `null` once the job's images are deleted.
   */
  file(name: string): { path: string; mime: string } | null {
    const found = this.#find(name);
    return found && existsSync(found.path) ? { path: found.path, mime: found.mime } : null;
  }

  /**
   * The trusted asset of the account's character photo behind `url` (this service's image link), while it
   * is usable: what a clip's image_urls can take with subject_consent no_real_person (spec 2.7).
   */
  character(accountId: number, url: string): Asset | undefined {
    const prefix = `${this.#options.site.origin}/files/images/`;
    const found = url.startsWith(prefix) ? this.#find(url.slice(prefix.length)) : undefined;
    if (!found || found.job.accountId !== accountId) return undefined;
    const { assets } = this.#options;
    const asset = found.image.assetId === null ? undefined : assets.get(accountId, found.image.assetId);
    return asset && assets.usable(asset) ? asset : undefined;
  }

  /**
   * Takes a job's images and the character assets made of them off the job; returns what removes their
   * files, to run once that is saved. A job still generating makes its images anyway and loses them as
   * soon as it ends (`ended` below).
   */
  purge(job: ImageJob): () => void {
    const { jobs, assets, files, assetCommands } = this.#options;
    const paths = job.images.flatMap((image) => [this.path(image).path, files.image(image.thumbToken, 'webp')]);
    const drops = job.images.flatMap((image) => {
      const asset = image.assetId === null ? undefined : assets.get(job.accountId, image.assetId);
      return asset ? [assetCommands.drop(asset)] : [];
    });
    jobs.deleteImages(job);
    return () => {
      for (const path of paths) rmSync(path, { force: true });
      for (const drop of drops) drop();
    };
  }

  /** An ended job: a deleted one loses the images it made anyway; a character's photos become assets. */
  #settle(job: ImageJob): void {
    try {
      const changed = job.imagesDeleted ? this.#purgeNow(job) : this.#adopt(job);
      if (changed) this.#options.store.commit().catch(this.#options.onError);
    } catch (error) {
      this.#options.onError(new Error(`cannot keep the photos of image job ${job.id} as assets: ${(error as Error).message}`));
    }
  }

  #purgeNow(job: ImageJob): boolean {
    if (job.images.length === 0) return false;
    this.purge(job)();
    return true;
  }

  /**
   * Makes the photos of an ended character job trusted assets (spec 2.7: `animate` trusted, usable as a clip
   * reference until `trusted_until`): each file hashed and kept once per sha256, as uploads are. Synchronous,
   * so a GET /images/{id}?wait woken by the same `ended` event already sees the assets.
   */
  #adopt(job: ImageJob): boolean {
    if (job.command.type !== 'character' || job.status === 'generating' || job.imagesDeleted) return false;
    const { assets, files, store } = this.#options;
    let changed = false;
    for (const [index, image] of job.images.entries()) {
      // Set once: a photo whose asset the caller deleted is not made an asset again.
      if (image.assetId !== null) continue;
      const { path, ext } = this.path(image);
      const bytes = readFileSync(path);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      files.keepAsset(sha256, ext, bytes);
      const trustedUntil = image.trustedUntil ?? (job.completedAt ?? job.plan.endAt) + CHARACTER_TRUST_MS;
      const asset = assets.addTrusted({ accountId: job.accountId, sha256, name: `character-${job.id}-${index + 1}.${ext}`, fileSize: bytes.length, mimeType: MIME[ext], ext, trustedUntil });
      image.assetId = asset.id;
      changed = true;
    }
    if (changed) store.table('image_job').put(job);
    return changed;
  }

  /** The image a file name `<token>.<ext>` (or a bare token) names, with its file. */
  #find(name: string): { job: ImageJob; image: ImageItem; path: string; mime: string } | undefined {
    const match = /^([A-Za-z0-9_-]{1,64})(?:\.(png|jpg|webp))?$/.exec(name);
    if (!match) return undefined;
    const [, token, ext] = match;
    // The token names its job in the jobs' index; no scan of every job.
    const job = this.#options.jobs.byToken(token!);
    for (const image of job?.images ?? []) {
      const file = this.path(image);
      if (image.token === token && (ext === undefined || ext === file.ext)) return { job: job!, image, path: file.path, mime: MIME[file.ext] };
      if (image.thumbToken === token && (ext === undefined || ext === 'webp')) return { job: job!, image, path: this.#options.files.image(token!, 'webp'), mime: MIME.webp };
    }
    return undefined;
  }
}
