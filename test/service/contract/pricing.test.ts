import { describe, expect, it } from 'vitest';
import { assistantClipPrice, clipPrice, imageCharge, imagePrice, MODEL_SPECS, VIDEO_MODELS, type VideoModel } from '../../../src/service/contract/pricing.js';

// Spec 2.13, cell by cell: model, resolution, per second, then 5 s, 10 s, 15 s, 30 s (null: n/a).
const TABLE: Array<[VideoModel, string, number, number, number, number, number | null]> = [
  ['standard', '480p', 2, 9, 18, 27, null],
  ['standard-hd', '720p', 4, 18, 36, 54, null],
  ['standard-fullhd', '1080p', 10, 45, 90, 135, null],
  ['cinema', '480p', 3, 14, 27, 41, 81],
  ['cinema-hd', '720p', 6, 27, 54, 81, 162],
  ['cinema-fullhd', '1080p', 15, 68, 135, 203, 405],
];

describe('clip prices (spec 2.13)', () => {
  it('lists the six models of the table, in its order', () => {
    expect(VIDEO_MODELS).toEqual(TABLE.map(([model]) => model));
  });

  for (const [model, resolution, perSecond, p5, p10, p15, p30] of TABLE) {
    it(`${model}: ${resolution}, ${perSecond}/s, ${p5} / ${p10} / ${p15} / ${p30 ?? 'n/a'}`, () => {
      expect(MODEL_SPECS[model].resolution).toBe(resolution);
      expect(MODEL_SPECS[model].perSecond).toBe(perSecond);
      expect(clipPrice(model, 5)).toBe(p5);
      expect(clipPrice(model, 10)).toBe(p10);
      expect(clipPrice(model, 15)).toBe(p15);
      if (p30 === null) expect(MODEL_SPECS[model].maxDuration).toBe(15);
      else {
        expect(MODEL_SPECS[model].maxDuration).toBe(30);
        expect(clipPrice(model, 30)).toBe(p30);
      }
      expect(MODEL_SPECS[model].minDuration).toBe(4);
    });
  }

  it('is ceil(per second × seconds × 0.9) for every model and duration, in exact integers', () => {
    for (const model of VIDEO_MODELS) {
      const { perSecond, minDuration, maxDuration } = MODEL_SPECS[model];
      for (let seconds = minDuration; seconds <= maxDuration; seconds++) {
        const tenths = perSecond * seconds * 9;
        expect(clipPrice(model, seconds)).toBe(Math.floor(tenths / 10) + (tenths % 10 === 0 ? 0 : 1));
      }
    }
  });

  it('charges assistants the base price: 2 per second standard, 4 per second HD (spec 5.7)', () => {
    expect(assistantClipPrice('standard', 5)).toBe(10);
    expect(assistantClipPrice('standard-hd', 5)).toBe(20);
    expect(assistantClipPrice('cinema-fullhd', 30)).toBe(450);
  });
});

describe('image prices (spec 2.13)', () => {
  it('standard 2 / 7, hd 4 / 14, character 5', () => {
    expect(imagePrice({ type: 'image', quality: 'standard', count: 1 })).toBe(2);
    expect(imagePrice({ type: 'image', quality: 'standard', count: 4 })).toBe(7);
    expect(imagePrice({ type: 'image', quality: 'hd', count: 1 })).toBe(4);
    expect(imagePrice({ type: 'image', quality: 'hd', count: 4 })).toBe(14);
    expect(imagePrice({ type: 'character', quality: 'standard', count: 4 })).toBe(5);
    expect(imagePrice({ type: 'character', quality: 'hd', count: 4 })).toBe(5);
  });

  it('shares a partial job out so the parts add up to the whole', () => {
    expect([0, 1, 2, 3, 4].map((made) => imageCharge(7, 4, made))).toEqual([0, 2, 4, 6, 7]);
    expect([0, 1, 2, 3, 4].map((made) => imageCharge(14, 4, made))).toEqual([0, 4, 8, 11, 14]);
    expect(imageCharge(2, 1, 1)).toBe(2);
    expect(imageCharge(2, 1, 0)).toBe(0);
  });
});
