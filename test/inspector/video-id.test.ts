// The video id the inspector shows (issue 23: read where it stands when it can): the body's top-level id as
// JSON.parse reads it, null for anything else.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { videoIdOf } from '../../src/inspector/video-id.js';

const reference = (text: string): string | null => {
  try {
    const id = (JSON.parse(text) as { id?: unknown }).id;
    return typeof id === 'number' || typeof id === 'string' ? String(id) : null;
  } catch {
    return null;
  }
};

describe('videoIdOf', () => {
  it('gives what JSON.parse gives for any JSON object, ids of every kind, nested, repeated, escaped or spaced', () => {
    const id = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.constant(null), fc.boolean(), fc.array(fc.integer()), fc.object());
    fc.assert(
      fc.property(fc.dictionary(fc.oneof(fc.string(), fc.constant('id')), fc.jsonValue()), id, fc.boolean(), fc.boolean(), (rest, value, first, spaced) => {
        const object = first ? { id: value, ...rest } : { ...rest, id: value };
        const text = JSON.stringify(object, null, spaced ? 2 : undefined);
        expect(videoIdOf(Buffer.from(text))).toBe(reference(text));
      }),
      { numRuns: 500 },
    );
    for (const text of ['{"id":48213,"event":"video.completed"}', '{"\\u0069d":"vid_1"}', '{"id":"a\\"b"}', '{"id":1e3}', '{"id":1,"id":"two"}', '{"x":{"id":9}}', '{"id":-0.50}', '{ "id" : 7 }', '{"id":"ü🦊"}']) {
      expect(videoIdOf(Buffer.from(text))).toBe(reference(text));
    }
  });

  it('gives null for what is not an object, and never throws on broken bytes', () => {
    for (const text of ['', '[{"id":1}]', '"id"', '{"id":', '{"id":1', '{"id":01}', '{"id":tru}', '{"id":{}}', 'null']) expect(videoIdOf(Buffer.from(text))).toBe(reference(text));
    // Read where it stands, the id of a body with a stray byte after its object shows (JSON.parse refuses the body).
    expect(videoIdOf(Buffer.from('{"id":1}}'))).toBe('1');
    fc.assert(fc.property(fc.uint8Array({ maxLength: 60 }), (bytes) => void videoIdOf(Buffer.concat([Buffer.from('{'), bytes]))));
  });
});
