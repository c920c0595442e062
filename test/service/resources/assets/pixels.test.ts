import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPixels, MAX_ASSET_PIXELS } from '../../../../src/service/resources/assets/pixels.js';
import { heicClaiming, PNG_GARBAGE, pngClaiming } from './broken-images.js';

const dir = mkdtempSync(join(tmpdir(), 'cliphook-pixels-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (bytes: Buffer) => {
  const path = join(dir, `f${n++}`);
  writeFileSync(path, bytes);
  return path;
};

describe('checkPixels (issue 20 item 2): what POST /assets keeps must be an image the service can decode', () => {
  it(`takes real photos up to ${MAX_ASSET_PIXELS / 1e6} megapixels`, async () => {
    expect(MAX_ASSET_PIXELS).toBe(50_000_000);
    const photo = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#336699' } }).jpeg().toBuffer();
    expect(await checkPixels(file(photo), 'image/jpeg')).toEqual({ ok: true, width: 640, height: 480 });
    const gif = await sharp({ create: { width: 20, height: 10, channels: 3, background: '#000' } }).gif().toBuffer();
    expect(await checkPixels(file(gif), 'image/gif')).toMatchObject({ ok: true, width: 20, height: 10 });
  });

  it('refuses a header that claims more pixels than the limit with 413 too_large, without decoding it', async () => {
    for (const [width, height] of [[100_000, 100_000], [20_000, 20_000], [7072, 7072]] as const) {
      const started = Date.now();
      expect(await checkPixels(file(pngClaiming(width, height)), 'image/png')).toEqual({
        ok: false, code: 'too_large', detail: `The image is ${width}×${height} pixels; the limit is 50 megapixels (50,000,000 pixels).`, extra: { max_pixels: MAX_ASSET_PIXELS, width, height },
      });
      expect(Date.now() - started).toBeLessThan(2_000);
    }
  });

  it('refuses pixels that cannot be decoded (a signature then garbage, a header with no data behind it) with 400 bad_mime', async () => {
    expect(await checkPixels(file(PNG_GARBAGE), 'image/png')).toMatchObject({ ok: false, code: 'bad_mime', detail: expect.stringMatching(/cannot be read as a png image/) });
    expect(await checkPixels(file(pngClaiming(5000, 5000)), 'image/png')).toMatchObject({ ok: false, code: 'bad_mime', detail: expect.stringMatching(/pixels cannot be decoded/) });
    const photo = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#336699' } }).jpeg().toBuffer();
    expect(await checkPixels(file(photo.subarray(0, photo.length >> 1)), 'image/jpeg')).toMatchObject({ ok: false, code: 'bad_mime' });
  });

  it('reads a HEIC photo\'s size from its container (this simulator has no HEVC decoder), refusing a huge or unreadable one', async () => {
    expect(await checkPixels(file(await heicClaiming(4032, 3024)), 'image/heic')).toEqual({ ok: true, width: 4032, height: 3024 });
    expect(await checkPixels(file(await heicClaiming(100_000, 100_000)), 'image/heic')).toMatchObject({ ok: false, code: 'too_large' });
    const bare = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypheic'), Buffer.from([0, 0, 0, 0]), Buffer.from('mif1heic'), Buffer.alloc(100)]);
    expect(await checkPixels(file(bare), 'image/heic')).toMatchObject({ ok: false, code: 'bad_mime' });
  });
});
