import { randomBytes } from 'node:crypto';
import { copyFile, link } from 'node:fs/promises';
import type { Files } from '../../core/files.js';
import { drawnText } from '../../resources/images/render.js';
import type { ImageJob, ImageRenderer } from '../../resources/images/job.js';

type Rendered = Awaited<ReturnType<ImageRenderer['render']>>;

/**
 * The renderer of one seed (drawing every picture, 20 seeded jobs take 9 s and 10,000 would take hours
 * inside one request): each kind of picture (type, ratio, quality, words drawn, a character's pose) is drawn once,
 * and every further image of that kind is the same picture under its own tokens, hard-linked (copied where
 * links are refused), so deleting one job's images leaves the others'. A seed's renders are thus at most
 * 5 ratios × 2 qualities × (1 scene + 4 poses) = 50, whatever the number of jobs.
 * @example const pictures = new SeedPictures(renderer, files); await jobs.seed(account, keyId, command, { ...state, renderer: pictures });
 */
export class SeedPictures implements ImageRenderer {
  readonly #renderer: ImageRenderer;
  readonly #files: Files;
  readonly #drawn = new Map<string, Promise<Rendered>>();

  constructor(renderer: ImageRenderer, files: Files) {
    this.#renderer = renderer;
    this.#files = files;
  }

  /** How many pictures were drawn (the rest are links to them). */
  get drawn(): number {
    return this.#drawn.size;
  }

  async render(job: ImageJob, index: number): Promise<Rendered> {
    const { command } = job;
    // Seeded jobs take no photos, so the picture depends on these alone.
    const kind = JSON.stringify([command.type, command.aspectRatio, command.quality, drawnText(job), command.type === 'character' ? index : 0]);
    const first = this.#drawn.get(kind);
    if (!first) {
      const drawing = this.#renderer.render(job, index);
      this.#drawn.set(kind, drawing);
      return drawing;
    }
    const picture = await first;
    const ext = picture.format === 'png' ? 'png' : 'jpg';
    const token = randomBytes(18).toString('base64url');
    const thumbToken = randomBytes(18).toString('base64url');
    await same(this.#files.image(picture.token, ext), this.#files.image(token, ext));
    await same(this.#files.image(picture.thumbToken, 'webp'), this.#files.image(thumbToken, 'webp'));
    return { ...picture, token, thumbToken };
  }

  discard(images: Parameters<NonNullable<ImageRenderer['discard']>>[0]): Promise<void> {
    return this.#renderer.discard?.(images) ?? Promise.resolve();
  }
}

/** `to` becomes the same file as `from`: a hard link, or a copy on a file system without them. */
async function same(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch {
    await copyFile(from, to);
  }
}
