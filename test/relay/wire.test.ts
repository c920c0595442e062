// The hub writes event messages to the socket itself (issue 23): byte for byte what ws would have sent.
import * as ws from 'ws';
import { describe, expect, it } from 'vitest';
import { encodeFrame, type EventFrame } from '../../src/relay/frames.js';
import { eventMessage } from '../../src/relay/wire.js';

// ws's own framing, as its server side sends a binary message.
const Sender = (ws as unknown as { Sender: { frame(data: Buffer, options: object): Buffer[] } }).Sender;

const frame = (bodyBytes: number): EventFrame => ({
  type: 'event', seq: 42, receivedAt: 1_795_000_000_000, method: 'POST', path: '/x', query: '?a=1', headers: ['Content-Type', 'application/json', 'X-É', 'vàlue'],
  body: Buffer.alloc(bodyBytes, 0x61), backlog: false, replay: true,
});

describe('eventMessage', () => {
  it("is ws's binary message of encodeFrame's bytes, for every length form (7-bit, 16-bit, 64-bit)", () => {
    for (const size of [0, 20, 125, 200, 65_000, 65_536, 70_000, 300_000]) {
      const data = encodeFrame(frame(size)) as Buffer;
      const expected = Buffer.concat(Sender.frame(data, { fin: true, opcode: 2, mask: false, readOnly: false, rsv1: false }));
      expect(eventMessage(frame(size)).equals(expected)).toBe(true);
    }
  });
});
