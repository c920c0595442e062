import { describe, expect, it } from 'vitest';
import { withoutDeliveredAt } from '../../src/receiver/event-key.js';

const T = '2026-11-22T12:00:00.000Z';

describe('withoutDeliveredAt', () => {
  it('cuts the value the emitter appends, keeping the quotes', () => {
    expect(withoutDeliveredAt(`{"event":"video.failed","id":1,"delivered_at":"${T}"}`, T)).toBe('{"event":"video.failed","id":1,"delivered_at":""}');
  });

  it('finds the member anywhere, with whitespace around the colon', () => {
    expect(withoutDeliveredAt(`{\n  "delivered_at" :\t"${T}",\n  "id": 1\n}`, T)).toBe('{\n  "delivered_at" :\t"",\n  "id": 1\n}');
  });

  it('skips text that only looks like the member: inside a string, or a member name with an escaped quote', () => {
    const inPrompt = `{"prompt":"\\"delivered_at\\":\\"${T}\\"","delivered_at":"${T}"}`;
    expect(withoutDeliveredAt(inPrompt, T)).toBe(`{"prompt":"\\"delivered_at\\":\\"${T}\\"","delivered_at":""}`);
    const escapedName = `{"delivered_at":"${T}","x\\"delivered_at":"${T}"}`;
    expect(withoutDeliveredAt(escapedName, T)).toBe(`{"delivered_at":"","x\\"delivered_at":"${T}"}`);
    // An even run of backslashes ends in a real quote: that member is real.
    expect(withoutDeliveredAt(`{"a":"\\\\","delivered_at":"${T}"}`, T)).toBe('{"a":"\\\\","delivered_at":""}');
  });

  it('leaves a body whose value does not appear as parsed (written with escapes) whole', () => {
    const escaped = `{"delivered_at":"\\u0032026-11-22T12:00:00.000Z"}`;
    expect(withoutDeliveredAt(escaped, T)).toBe(escaped);
    expect(withoutDeliveredAt('{"id":1}', T)).toBe('{"id":1}');
  });
});
