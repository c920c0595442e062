// The uploads of issue 20 item 2, built byte by byte: a PNG whose header claims a size its data is not,
// and a PNG signature followed by garbage. Each is a valid PNG to a sniffer of magic bytes.
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A well-formed PNG header claiming `width`×`height` RGB pixels, with a few bytes of pixel data: what a decoder chokes on. */
export function pngClaiming(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  return Buffer.concat([SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.alloc(10))), chunk('IEND', Buffer.alloc(0))]);
}

/** A PNG signature followed by garbage. */
export const PNG_GARBAGE = Buffer.concat([SIGNATURE, Buffer.from('this is not a PNG chunk, only garbage after the signature')]);

/**
 * A HEIC container (brand heic) whose image property `ispe` says `width`×`height`: sharp's AVIF with its
 * brands renamed, since no HEVC encoder ships with sharp. The box layout is HEIF's either way.
 */
export async function heicClaiming(width: number, height: number): Promise<Buffer> {
  const avif = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#4477aa' } }).avif().toBuffer();
  const bytes = Buffer.from(avif.toString('latin1').replace(/avif/g, 'heic'), 'latin1');
  const ispe = bytes.indexOf('ispe', 0, 'latin1');
  if (ispe < 0) throw new Error('no ispe box');
  // ispe: type, version and flags (4 bytes), then width and height.
  bytes.writeUInt32BE(width, ispe + 8);
  bytes.writeUInt32BE(height, ispe + 12);
  return bytes;
}
