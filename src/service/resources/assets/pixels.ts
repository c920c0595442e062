import { readFile } from 'node:fs/promises';
import sharp from 'sharp';

/**
 * The most pixels a reference photo may have (spec 4.12 names no limit): 50 megapixels, what a 48-50 MP
 * phone camera takes, and twelve times the largest image the service makes (hd, about 4.2 MP, spec 2.13).
 * A larger one is 413 too_large when it is uploaded: a header claiming 100000×100000 in 84 bytes would
 * otherwise be kept, and no job that used it would ever end.
 */
export const MAX_ASSET_PIXELS = 50_000_000;

/** How the service decodes a stored photo (the upload check and the image renderer alike), so both agree on what decodes. */
export const DECODE_OPTIONS = { limitInputPixels: MAX_ASSET_PIXELS } as const;

export type PixelCheck = { ok: true; width: number; height: number } | { ok: false; code: 'bad_mime' | 'too_large'; detail: string; extra?: Record<string, unknown> };

/**
 * Whether the file at `path` (already recognised as `mime` by its magic bytes) is an image the service can
 * use: its header names a size within `MAX_ASSET_PIXELS` (else 413 too_large, read from the header without
 * decoding a pixel), and its pixels decode (else 400 bad_mime: the bytes are not the image they claim to
 * be). HEIC is checked by the size its container declares: sharp's libvips has no HEVC decoder.
 * @example await checkPixels('/tmp/upload', 'image/png') // { ok: true, width: 640, height: 480 }
 */
export async function checkPixels(path: string, mime: string): Promise<PixelCheck> {
  const format = mime.replace(/^image\//, '');
  let size: { width: number; height: number } | null;
  try {
    if (mime === 'image/heic') size = heifSize(await readFile(path));
    else {
      // The header only: `limitInputPixels: false` so a huge claim is measured here rather than refused as damage.
      const { width, height } = await sharp(path, { limitInputPixels: false }).metadata();
      size = width && height ? { width, height } : null;
    }
  } catch {
    size = null;
  }
  if (!size) return { ok: false, code: 'bad_mime', detail: `The file cannot be read as a ${format} image: its header is damaged or missing.` };
  const { width, height } = size;
  if (width * height > MAX_ASSET_PIXELS) {
    return { ok: false, code: 'too_large', detail: `The image is ${width}×${height} pixels; the limit is ${MAX_ASSET_PIXELS / 1e6} megapixels (${MAX_ASSET_PIXELS.toLocaleString('en-US')} pixels).`, extra: { max_pixels: MAX_ASSET_PIXELS, width, height } };
  }
  if (mime !== 'image/heic') {
    try {
      // Decoded to a small preview: every row is read (a truncated or garbled image fails) without holding the whole picture.
      await sharp(path, DECODE_OPTIONS).resize(64, 64, { fit: 'inside' }).raw().toBuffer();
    } catch {
      return { ok: false, code: 'bad_mime', detail: `The file's header says a ${width}×${height} ${format} image, but its pixels cannot be decoded.` };
    }
  }
  return { ok: true, width, height };
}

/**
 * The largest image size a HEIF container (HEIC) declares: its `ispe` properties (ISO/IEC 23008-12), found
 * under meta → iprp → ipco. The largest, as a grid image's size is its whole picture. `null` when there is none.
 */
export function heifSize(bytes: Buffer): { width: number; height: number } | null {
  const meta = child(bytes, 0, bytes.length, 'meta');
  // meta is a full box: version and flags come first.
  const iprp = meta && child(bytes, meta.start + 4, meta.end, 'iprp');
  const ipco = iprp && child(bytes, iprp.start, iprp.end, 'ipco');
  if (!ipco) return null;
  let best: { width: number; height: number } | null = null;
  for (const box of boxes(bytes, ipco.start, ipco.end)) {
    if (box.type !== 'ispe' || box.end - box.start < 12) continue;
    const width = bytes.readUInt32BE(box.start + 4);
    const height = bytes.readUInt32BE(box.start + 8);
    if (width > 0 && height > 0 && (!best || width * height > best.width * best.height)) best = { width, height };
  }
  return best;
}

interface Box {
  type: string;
  /** Where the box's content starts and ends (after its header). */
  start: number;
  end: number;
}

function child(bytes: Buffer, start: number, end: number, type: string): Box | undefined {
  for (const box of boxes(bytes, start, end)) if (box.type === type) return box;
  return undefined;
}

/** The ISO BMFF boxes between `start` and `end`, stopping at the first one whose size does not fit. */
function* boxes(bytes: Buffer, start: number, end: number): Generator<Box> {
  let at = start;
  while (at + 8 <= end) {
    let size = bytes.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) return;
      size = Number(bytes.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = end - at;
    if (size < header || at + size > end) return;
    yield { type: bytes.toString('latin1', at + 4, at + 8), start: at + header, end: at + size };
    at += size;
  }
}
