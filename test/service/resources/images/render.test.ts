import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import type { ImageJob } from '../../../../src/service/resources/images/job.js';
import { imageSize, SharpRenderer, THUMBNAIL_WIDTH } from '../../../../src/service/resources/images/render.js';
import { IMAGE_RATIOS, ImageRequest } from '../../../../src/service/contract/images.js';
import { parseOrThrow } from '../../../../src/service/contract/problems.js';

const dir = mkdtempSync(join(tmpdir(), 'cliphook-render-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function job(body: Record<string, unknown>): ImageJob {
  const command = parseOrThrow(ImageRequest, body);
  return {
    id: 1, accountId: 1, keyId: 'k', status: 'generating', command, creditsReserved: command.price, creditsCharged: null,
    creditsRefunded: 0, images: [], imagesDeleted: false, errorCode: null, createdAt: 0, completedAt: null, plan: { endAt: 0, make: 1, failWith: null },
  };
}

describe('image sizes (spec 2.13: about 2.4 MP standard, 4.2 MP hd)', () => {
  it('match the aspect ratio and the megapixels for every ratio and quality', () => {
    for (const ratio of IMAGE_RATIOS) {
      const [w, h] = ratio.split(':').map(Number) as [number, number];
      for (const [quality, mp] of [['standard', 2.4], ['hd', 4.2]] as const) {
        const { width, height } = imageSize(ratio, quality);
        expect(width % 16).toBe(0);
        expect(height % 16).toBe(0);
        expect(Math.abs(width / height - w / h)).toBeLessThan(0.02);
        expect(Math.abs((width * height) / 1e6 - mp)).toBeLessThan(0.1);
      }
    }
  });
});

describe('SharpRenderer', () => {
  const renderer = new SharpRenderer({ dir });

  it('makes a JPEG without text and a WebP thumbnail, at the promised size', async () => {
    const made = await renderer.render(job({ description: 'a lighthouse at dawn', aspect_ratio: '16:9' }), 0);
    expect(made).toMatchObject({ format: 'jpeg', ...imageSize('16:9', 'standard') });
    const meta = await sharp(readFileSync(join(dir, `${made.token}.jpg`))).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', made.width, made.height]);
    const thumb = await sharp(readFileSync(join(dir, `${made.thumbToken}.webp`))).metadata();
    expect([thumb.format, thumb.width]).toEqual(['webp', THUMBNAIL_WIDTH]);
  });

  it('makes a PNG when the image has text (a greeting, a headline, text), hd at 4.2 MP', async () => {
    const made = await renderer.render(job({ template: 'eid', fields: { style: 'emerald_gold', greeting: 'Eid Mubarak عيد مبارك' }, quality: 'hd', aspect_ratio: '4:5' }), 0);
    expect(made).toMatchObject({ format: 'png', ...imageSize('4:5', 'hd') });
    const meta = await sharp(readFileSync(join(dir, `${made.token}.png`))).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', made.width, made.height]);
  });

  it('draws a character, and composites the photo of an edit', async () => {
    const character = await renderer.render(job({ type: 'character', character: { age: '51+', style: 'photo' } }), 2);
    expect((await sharp(readFileSync(join(dir, `${character.token}.jpg`))).metadata()).format).toBe('jpeg');
    const photo = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#ff0000' } }).png().toBuffer();
    const editing = new SharpRenderer({ dir, sources: async () => [photo] });
    const edit = await editing.render(job({ description: 'make it blue', asset_ids: [1], subject_consent: 'no_real_person' }), 0);
    const { data, info } = await sharp(readFileSync(join(dir, `${edit.token}.jpg`))).raw().toBuffer({ resolveWithObject: true });
    const centre = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * info.channels;
    expect(data[centre]!).toBeGreaterThan(200);
    expect(data[centre + 1]!).toBeLessThan(60);
  });
});
