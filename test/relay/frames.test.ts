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
        body: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      }),
      fc.record({ type: fc.constant('fail' as const), seq: fc.integer({ min: 1 }), code: fc.constantFrom('local_unreachable' as const, 'local_timeout' as const), detail: fc.string({ maxLength: 100 }) }),
      fc.record({ type: fc.constant('replay' as const), ref: fc.string({ maxLength: 100 }) }),
    );
    fc.assert(
      fc.property(frameArb, (frame) => {
        const data = encodeFrame(frame);
        // Reply frames carry their body raw, in a binary frame; the others are JSON text.
        expect(typeof data === 'string').toBe(frame.type !== 'reply');
        expect(parseClientFrame(Buffer.from(data), typeof data !== 'string')).toEqual(frame);
      }),
    );
  });

  it('writes the head of an event and a reply frame as JSON.stringify writes the frame without its body (issue 23: joined by hand)', () => {
    const headOf = (encoded: string | Buffer) => {
      const bytes = encoded as Buffer;
      return bytes.toString('utf8', 4, 4 + bytes.readUInt32BE(0));
    };
    fc.assert(
      fc.property(
        fc.record({
          seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
          receivedAt: fc.integer({ min: 0, max: 4e12 }),
          method: fc.stringMatching(/^[A-Z]{1,10}$/),
          path: fc.string({ maxLength: 30 }),
          query: fc.string({ maxLength: 30 }),
          headers: fc.array(fc.string({ maxLength: 20 }), { maxLength: 12 }),
          backlog: fc.boolean(),
          replay: fc.boolean(),
          status: fc.integer({ min: 200, max: 599 }),
        }),
        ({ status, ...fields }) => {
          const body = Buffer.from('{"x":1}');
          const event: EventFrame = { type: 'event', ...fields, body };
          const { body: _b, ...eventHead } = event;
          expect(headOf(encodeFrame(event))).toBe(JSON.stringify(eventHead));
          const reply = { type: 'reply' as const, seq: fields.seq, status, headers: fields.headers, body };
          const { body: _r, ...replyHead } = reply;
          expect(headOf(encodeFrame(reply))).toBe(JSON.stringify(replyHead));
        },
      ),
    );
  });

  it('keeps body bytes exact through a binary frame, and through base64 for the data file', () => {
    const event = (body: Buffer): EventFrame => ({ type: 'event', seq: 1, receivedAt: 1, method: 'POST', path: '', query: '', headers: ['X-A', 'é'], body, backlog: false, replay: false });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => {
        const body = Buffer.from(bytes);
        expect((parseServerFrame(encodeFrame(event(body)), true) as EventFrame).body.equals(body)).toBe(true);
        expect(decodeBody(encodeBody(bytes)).equals(body)).toBe(true);
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
    // Binary frames: a head length (often a lie), a head of JSON or not, and any tail.
    const binaryFrame = fc
      .tuple(fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.constant(-1)), anything, fc.uint8Array({ maxLength: 40 }))
      .map(([length, head, tail]) => {
        const headBytes = Buffer.from(head);
        const prefix = Buffer.alloc(4);
        prefix.writeUInt32BE(length === -1 ? headBytes.length : length);
        return Buffer.concat([prefix, headBytes, tail]);
      });
    const data = fc.oneof(anything.map((text) => Buffer.from(text)), binaryFrame, fc.uint8Array({ maxLength: 8 }).map((bytes) => Buffer.from(bytes)));
    fc.assert(
      fc.property(data, fc.boolean(), (bytes, binary) => {
        for (const parse of [parseClientFrame, parseServerFrame]) {
          try {
            parse(bytes, binary);
          } catch (error) {
            expect(error).toBeInstanceOf(FrameError);
            expect([CLOSE.policy, CLOSE.tooBig]).toContain((error as FrameError).closeCode);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('refuses what would break the HTTP reply: bad statuses, header injection, a body in the wrong kind of frame', () => {
    const reply = { type: 'reply', seq: 1, status: 200, headers: ['x-a', 'b'] };
    const binary = (head: unknown, headLength?: number) => {
      const json = Buffer.from(JSON.stringify(head));
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32BE(headLength ?? json.length);
      return Buffer.concat([prefix, json, Buffer.from('body')]);
    };
    expect(parseClientFrame(binary(reply), true)).toEqual({ ...reply, body: Buffer.from('body') });
    const bad = [
      { ...reply, status: 101 },
      { ...reply, status: 600 },
      { ...reply, status: 200.5 },
      { ...reply, seq: 0 },
      { ...reply, headers: ['x-a', 'b\r\nx-evil: 1'] },
      { ...reply, headers: ['bad name', 'b'] },
      { ...reply, headers: ['odd'] },
      { type: 'fail', seq: 1, code: 'other', detail: '' },
      { type: 'nope' },
      [],
    ];
    for (const frame of bad) expect(() => parseClientFrame(binary(frame), true)).toThrow(FrameError);
    // A reply as text (the old base64 form) and a fail or replay as binary are refused.
    expect(() => parseClientFrame(JSON.stringify({ ...reply, body: '' }), false)).toThrow(FrameError);
    expect(() => parseClientFrame(binary({ type: 'replay', ref: '1' }), true)).toThrow(FrameError);
    // A head length past the end of the frame.
    expect(() => parseClientFrame(binary(reply, 1000), true)).toThrow(FrameError);
    expect(() => parseClientFrame(Buffer.from([0, 0]), true)).toThrow(FrameError);
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
    const event: EventFrame = { type: 'event', seq: 3, receivedAt: 1, method: 'POST', path: '/a', query: '?b=1', headers: [], body: Buffer.alloc(0), backlog: true, replay: false };
    expect(parseServerFrame(encodeFrame(event), true)).toEqual(event);
    expect(() => parseServerFrame(encodeFrame({ ...event, path: 'a' }), true)).toThrow(FrameError);
    expect(() => parseServerFrame(encodeFrame({ ...event, method: 'PO ST' }), true)).toThrow(FrameError);
    expect(() => parseServerFrame(encodeFrame(event), false)).toThrow(FrameError);
  });
});
