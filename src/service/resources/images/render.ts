import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { DECODE_OPTIONS } from '../assets/pixels.js';
import { IMAGE_MEGAPIXELS, type ImageQuality } from '../../contract/pricing.js';
import type { ImageJob, ImageRenderer } from './job.js';
import type { ImageRatio } from '../../contract/images.js';

/** Width of the WebP preview (spec 2.7 `thumbnail_url`: a small preview). */
export const THUMBNAIL_WIDTH = 320;

/**
 * Pixel size for an aspect ratio at the spec's megapixels (2.13: standard about 2.4, hd about 4.2), in
 * multiples of 16 as image models produce them.
 * @example imageSize('16:9', 'standard') // { width: 2064, height: 1168 }
 */
export function imageSize(ratio: ImageRatio, quality: ImageQuality): { width: number; height: number } {
  const [w, h] = ratio.split(':').map(Number) as [number, number];
  const pixels = IMAGE_MEGAPIXELS[quality] * 1_000_000;
  const width = Math.round(Math.sqrt((pixels * w) / h) / 16) * 16;
  const height = Math.round(((width * h) / w) / 16) * 16;
  return { width, height };
}

/** Colours per template preset: the picture shows which style was asked for. */
const PALETTES: Record<string, [string, string, string]> = {
  emerald_gold: ['#0b6e4f', '#053b2b', '#d4af37'], pastel: ['#f7d6e0', '#cde7f0', '#7a6c8f'], midnight: ['#141e46', '#05081a', '#e8d48a'],
  minimal: ['#f4f1ea', '#e4dfd3', '#2b2b2b'], warm_gold: ['#f6b042', '#a4462a', '#fff3c4'], rangoli: ['#e4447a', '#3a2a8c', '#ffd23f'],
  maroon: ['#6d1a36', '#2e0715', '#f2c14e'], ribbons: ['#1f6f3f', '#c8102e', '#ffffff'], skyline: ['#3b6ea8', '#f2a65a', '#0e1a2b'],
  desert: ['#e8b86d', '#a0522d', '#3d2817'], classic: ['#a4161a', '#0b3d20', '#f5e6c8'], modern: ['#111111', '#333333', '#ff3366'],
  illustrated: ['#7ec8e3', '#f9f3e5', '#e4572e'], elegant: ['#f5efe6', '#c9b79c', '#4a3f35'], playful: ['#ffcf56', '#ff6b6b', '#2e4057'],
  floral: ['#f9d5e5', '#9ad1a8', '#7a3b69'], bold: ['#ff3b30', '#1c1c1e', '#ffffff'], luxury: ['#0c0c0c', '#2a2418', '#d4af37'],
  marble: ['#f2f2f0', '#cfcfcb', '#8c8c88'], studio: ['#e9e9ee', '#b8b8c4', '#202030'], botanical: ['#2f5d3a', '#a7c957', '#f2e8cf'],
  dark: ['#1b1b1f', '#050507', '#c0c0c8'], office: ['#dfe7ee', '#8aa1b4', '#1f2d3a'], outdoor: ['#8fc1e3', '#5b8c51', '#f4f1de'],
};

const escapeXml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** A seeded random sequence, so one job's pictures are alike and a re-render is the same. */
function seeded(seed: string): () => number {
  let state = createHash('sha256').update(seed).digest().readUInt32LE(0) || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/** The words drawn into the picture: what the request asked to be written, nothing else (spec 2.7: PNG when there is text). */
export function drawnText(job: Pick<ImageJob, 'command'>): string[] {
  const { command } = job;
  return [command.fields.greeting, command.fields.headline, command.text, command.fields.subject].filter((line): line is string => Boolean(line));
}

export interface SharpRendererOptions {
  /** Folder the files go to, named by their unguessable tokens. */
  dir: string;
  /** The bytes of the photos a job edits (its asset_ids and image_urls), when they can be had. */
  sources?: (job: ImageJob) => Promise<Buffer[]>;
}

/**
 * Makes a job's images with sharp: a picture that shows what was asked (the template's colours, the
 * words to draw, a made-up adult for a character, the edited photo), at the promised size and format:
 * PNG when it has text, JPEG otherwise, and a WebP preview.
 */
export class SharpRenderer implements ImageRenderer {
  readonly #dir: string;
  readonly #sources: SharpRendererOptions['sources'];

  constructor({ dir, sources }: SharpRendererOptions) {
    this.#dir = dir;
    this.#sources = sources;
  }

  async render(job: ImageJob, index: number) {
    const { width, height } = imageSize(job.command.aspectRatio, job.command.quality);
    const lines = drawnText(job);
    const format = lines.length > 0 ? 'png' : 'jpeg';
    const random = seeded(`${job.id}:${job.command.type === 'character' ? 'person' : index}`);
    const svg = job.command.type === 'character' ? characterSvg(width, height, random, index, job) : sceneSvg(width, height, random, job, lines);
    let image = sharp(Buffer.from(svg));
    const photos = this.#sources ? await this.#sources(job) : [];
    if (photos.length > 0) {
      const photo = await photoLayer(photos[index % photos.length]!, Math.round(width * 0.6), Math.round(height * 0.6));
      image = sharp(await image.png().toBuffer()).composite([{ input: photo, gravity: 'center' }]);
    }
    const bytes = format === 'png' ? await image.png({ compressionLevel: 6 }).toBuffer() : await image.jpeg({ quality: 86, mozjpeg: true }).toBuffer();
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const token = randomBytes(18).toString('base64url');
    const thumbToken = randomBytes(18).toString('base64url');
    await sharp(bytes).toFile(join(this.#dir, `${token}.${format === 'png' ? 'png' : 'jpg'}`));
    await sharp(bytes).resize(THUMBNAIL_WIDTH).webp({ quality: 70 }).toFile(join(this.#dir, `${thumbToken}.webp`));
    return { token, thumbToken, width, height, format } as const;
  }

  async discard(images: readonly { token: string; thumbToken: string; format: 'png' | 'jpeg' }[]): Promise<void> {
    for (const image of images) {
      await rm(join(this.#dir, `${image.token}.${image.format === 'png' ? 'png' : 'jpg'}`), { force: true });
      await rm(join(this.#dir, `${image.thumbToken}.webp`), { force: true });
    }
  }
}

/**
 * A photo shrunk to fit `width`×`height`, decoded as uploads are checked (`DECODE_OPTIONS`): a photo that
 * does not decode throws, and its job fails. HEIC is the exception: sharp's libvips has no HEVC decoder, so
 * a HEIC photo (whose size was checked at upload) is shown as a labelled panel rather than failing a job the
 * real service would make.
 */
async function photoLayer(bytes: Buffer, width: number, height: number): Promise<Buffer> {
  try {
    return await sharp(bytes, DECODE_OPTIONS).resize(width, height, { fit: 'inside' }).toBuffer();
  } catch (error) {
    if (!/^ftyp(heic|heix|hevc|heim|heis|mif1|msf1)$/.test(bytes.toString('latin1', 4, 12))) throw error;
    const size = Math.round(Math.min(width, height) / 8);
    const label = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#8a8f98"/><text x="50%" y="50%" font-family="DejaVu Sans, sans-serif" font-size="${size}" fill="#ffffff" text-anchor="middle" dominant-baseline="middle">HEIC photo</text></svg>`;
    return sharp(Buffer.from(label)).png().toBuffer();
  }
}

function sceneSvg(width: number, height: number, random: () => number, job: ImageJob, lines: string[]): string {
  const { command } = job;
  const preset = Object.values(command.fields).find((value) => PALETTES[value]);
  const hue = Math.floor(random() * 360);
  const [top, bottom, accent] = preset ? PALETTES[preset]! : [`hsl(${hue},60%,70%)`, `hsl(${(hue + 40) % 360},55%,35%)`, `hsl(${(hue + 180) % 360},70%,60%)`];
  const shapes: string[] = [];
  // Hills and a sun, placed by the seed: each image of a job differs, the style stays.
  const sunX = width * (0.2 + random() * 0.6);
  shapes.push(`<circle cx="${sunX}" cy="${height * 0.3}" r="${Math.min(width, height) * 0.12}" fill="${accent}" opacity="0.9"/>`);
  for (let i = 0; i < 3; i++) {
    const y = height * (0.6 + i * 0.12);
    const peak = height * (0.45 + random() * 0.2 + i * 0.1);
    shapes.push(`<path d="M0 ${y} Q ${width * random()} ${peak} ${width} ${y + height * 0.05} L ${width} ${height} L 0 ${height} Z" fill="${bottom}" opacity="${0.5 + i * 0.2}"/>`);
  }
  const size = Math.round(Math.min(width, height) / 12);
  const text = lines
    .slice(0, 3)
    .map((line, i) => `<text x="50%" y="${18 + i * 12}%" font-family="DejaVu Sans, sans-serif" font-size="${i === 0 ? size : Math.round(size * 0.6)}" font-weight="bold" fill="${i === 0 ? accent : '#ffffff'}" text-anchor="middle" stroke="#000000" stroke-opacity="0.35" stroke-width="${Math.max(1, size / 40)}">${escapeXml(line)}</text>`)
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${top}"/><stop offset="1" stop-color="${bottom}"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#sky)"/>${shapes.join('')}${text}</svg>`;
}

/** One made-up adult: the same face (seeded by the job), a different pose per photo. */
function characterSvg(width: number, height: number, random: () => number, index: number, job: ImageJob): string {
  const skin = ['#f1c27d', '#e0ac69', '#c68642', '#8d5524', '#ffdbac'][Math.floor(random() * 5)]!;
  const hair = ['#2c1b10', '#6a4e23', '#b55239', '#d6c4a3', '#1c1c1c'][Math.floor(random() * 5)]!;
  const backdrop = PALETTES[['studio', 'office', 'outdoor', 'elegant'][index % 4]!]!;
  const age = job.command.character?.age ?? '26-35';
  const grey = age === '51+' ? 0.6 : age === '36-50' ? 0.25 : 0;
  const cx = width * (0.5 + (index - 1.5) * 0.06);
  const cy = height * 0.45;
  const r = Math.min(width, height) * 0.2;
  const tilt = (index - 1.5) * 6;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="${backdrop[0]}"/><rect y="${height * 0.75}" width="100%" height="${height * 0.25}" fill="${backdrop[1]}"/><g transform="rotate(${tilt} ${cx} ${cy})"><ellipse cx="${cx}" cy="${cy + r * 1.9}" rx="${r * 1.4}" ry="${r}" fill="${backdrop[2]}"/><circle cx="${cx}" cy="${cy}" r="${r}" fill="${skin}"/><path d="M ${cx - r} ${cy - r * 0.1} Q ${cx} ${cy - r * 1.6} ${cx + r} ${cy - r * 0.1}" fill="${hair}"/><path d="M ${cx - r} ${cy - r * 0.1} Q ${cx} ${cy - r * 1.6} ${cx + r} ${cy - r * 0.1}" fill="#ffffff" opacity="${grey}"/><circle cx="${cx - r * 0.35}" cy="${cy}" r="${r * 0.08}" fill="#222"/><circle cx="${cx + r * 0.35}" cy="${cy}" r="${r * 0.08}" fill="#222"/><path d="M ${cx - r * 0.3} ${cy + r * 0.4} Q ${cx} ${cy + r * (0.5 + index * 0.05)} ${cx + r * 0.3} ${cy + r * 0.4}" stroke="#7a3b2e" stroke-width="${r * 0.05}" fill="none"/></g></svg>`;
}
