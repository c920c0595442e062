import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { RATIOS } from '../../../../src/service/contract/videos.js';

const MEDIA = fileURLToPath(new URL('../../../../templates/media/', import.meta.url));

/** The boxes of an ISO BMFF (MP4) buffer at one level: [type, payload]. */
function boxes(data: Buffer): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (let at = 0; at + 8 <= data.length; ) {
    const size = data.readUInt32BE(at);
    const type = data.toString('latin1', at + 4, at + 8);
    if (size < 8 || at + size > data.length) break;
    out.push([type, data.subarray(at + 8, at + size)]);
    at += size;
  }
  return out;
}

const child = (data: Buffer, type: string) => boxes(data).find(([t]) => t === type)?.[1];

describe('sample media (templates/media)', () => {
  for (const ratio of RATIOS) {
    const name = ratio.replace(':', 'x');
    it(`clip-${name}.mp4 has a video and an audio track at ${ratio}, with moov first; poster-${name}.jpg matches`, async () => {
      const mp4 = readFileSync(`${MEDIA}clip-${name}.mp4`);
      const top = boxes(mp4).map(([type]) => type);
      expect(top.indexOf('moov')).toBeLessThan(top.indexOf('mdat'));
      const moov = child(mp4, 'moov')!;
      const tracks = boxes(moov).filter(([type]) => type === 'trak').map(([, trak]) => {
        const handler = child(child(trak, 'mdia')!, 'hdlr')!.toString('latin1', 8, 12);
        const tkhd = child(trak, 'tkhd')!;
        // Version 0 tkhd: width and height are 16.16 fixed point in its last 8 bytes.
        return { handler, width: tkhd.readUInt32BE(tkhd.length - 8) >>> 16, height: tkhd.readUInt32BE(tkhd.length - 4) >>> 16 };
      });
      expect(tracks.map((t) => t.handler).sort()).toEqual(['soun', 'vide']);
      const video = tracks.find((t) => t.handler === 'vide')!;
      const [w, h] = ratio.split(':').map(Number) as [number, number];
      expect(Math.abs(video.width / video.height - w / h)).toBeLessThan(0.02);
      const poster = await sharp(readFileSync(`${MEDIA}poster-${name}.jpg`)).metadata();
      expect([poster.format, poster.width, poster.height]).toEqual(['jpeg', video.width, video.height]);
    });
  }
});
