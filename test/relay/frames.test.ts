import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CLOSE, FrameError, encodeBody, decodeBody, encodeFrame, parseClientFrame, parseServerFrame, type ClientFrame, type EventFrame } from '../../src/relay/frames.js';

const headersArb = fc.array(fc.tuple(fc.stringMatching(/^[A-Za-z0-9-]{1,20}$/), fc.stringMatching(/^[\x20-\x7e]{0,40}$/))).map((pairs) => pairs.flat());

describe('frames', () => {
  it('round-trips every valid listener frame', () => {
    const frameArb: fc.Arbitrary<ClientFrame> = fc.oneof(
      fc.record({
        type: fc.constant('reply' as const),
        seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        status: fc.integer({ min: 200, max: 599 }),
        headers: headersArb,
        body: fc.uint8Array({ maxLength: 200 }).map(encodeBody),
      }),
      fc.record({ type: fc.constant('fail' as const), seq: fc.integer({ min: 1 }), code: fc.constantFrom('local_unreachable' as const, 'local_timeout' as const), detail: fc.string({ maxLength: 100 }) }),
      fc.record({ type: fc.constant('replay' as const), ref: fc.string({ maxLength: 100 }) }),
    );
    fc.assert(
      fc.property(frameArb, (frame) => {
        expect(parseClientFrame(encodeFrame(frame), false)).toEqual(frame);
      }),
    );
  });

  it('keeps body bytes exact through base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => {
        expect(decodeBody(encodeBody(bytes)).equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('throws only FrameError, whatever arrives', () => {
    const anything = fc.oneof(
      fc.string(),
      fc.json(),
      fc.anything().map((value) => {
        try {
          return JSON.stringify(value) ?? 'null';
        } catch {
          return '{}';
        }
      }),
      fc.record({ type: fc.constantFrom('reply', 'fail', 'replay', 'event', 'hello'), seq: fc.anything(), status: fc.anything(), headers: fc.anything(), body: fc.anything(), code: fc.anything(), ref: fc.anything() }).map((v) => JSON.stringify(v) ?? '{}'),
    );
    fc.assert(
      fc.property(anything, fc.boolean(), (text, binary) => {
        for (const parse of [parseClientFrame, parseServerFrame]) {
          try {
            parse(Buffer.from(text), binary);
          } catch (error) {
            expect(error).toBeInstanceOf(FrameError);
            expect([CLOSE.policy, CLOSE.tooBig]).toContain((error as FrameError).closeCode);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('refuses what would break the HTTP reply: bad statuses, header injection, non-base64 bodies', () => {
    const reply = { type: 'reply', seq: 1, status: 200, headers: ['x-a', 'b'], body: '' };
    const bad = [
      { ...reply, status: 101 },
      { ...reply, status: 600 },
      { ...reply, status: 200.5 },
      { ...reply, seq: 0 },
      { ...reply, headers: ['x-a', 'b\r\nx-evil: 1'] },
      { ...reply, headers: ['bad name', 'b'] },
      { ...reply, headers: ['odd'] },
      { ...reply, body: 'not base64!' },
      { type: 'fail', seq: 1, code: 'other', detail: '' },
      { type: 'nope' },
      [],
    ];
    for (const frame of bad) expect(() => parseClientFrame(JSON.stringify(frame), false)).toThrow(FrameError);
    expect(() => parseClientFrame('{}', true)).toThrow(FrameError);
  });

  it('says 1009 for a frame over the size limit', () => {
    const error = (() => {
      try {
        parseClientFrame(JSON.stringify({ type: 'replay', ref: 'x'.repeat(100) }), false, 50);
      } catch (caught) {
        return caught as FrameError;
      }
      return null;
    })();
    expect(error?.closeCode).toBe(CLOSE.tooBig);
  });

  it('parses event frames and checks path and query', () => {
    const event: EventFrame = { type: 'event', seq: 3, receivedAt: 1, method: 'POST', path: '/a', query: '?b=1', headers: [], body: '', backlog: true, replay: false };
    expect(parseServerFrame(encodeFrame(event), false)).toEqual(event);
    expect(() => parseServerFrame(encodeFrame({ ...event, path: 'a' }), false)).toThrow(FrameError);
    expect(() => parseServerFrame(encodeFrame({ ...event, method: 'PO ST' }), false)).toThrow(FrameError);
  });
});
