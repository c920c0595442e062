import { eventHead, type EventFrame } from './frames.js';

/**
 * An event frame as a whole WebSocket message, ready for the connection's TCP socket: the RFC 6455 §5.2
 * header (FIN, binary, unmasked, as a server sends) and the frame (`encodeFrame`'s bytes) in one buffer.
 * The hub writes it itself rather than through ws's `send`, which costs a header buffer, two writes and
 * its checks per event; ws writes its own frames (pings, pongs, close) whole, one call each, and
 * with permessage-deflate off it never holds a message back, so the two cannot interleave mid-frame.
 */
export function eventMessage(frame: EventFrame): Buffer {
  const head = eventHead(frame);
  const headBytes = Buffer.byteLength(head);
  const payload = 4 + headBytes + frame.body.length;
  const header = payload < 126 ? 2 : payload < 65_536 ? 4 : 10;
  const out = Buffer.allocUnsafe(header + payload);
  out[0] = 0x82; // FIN, opcode 2 (binary)
  if (header === 2) out[1] = payload;
  else if (header === 4) {
    out[1] = 126;
    out.writeUInt16BE(payload, 2);
  } else {
    out[1] = 127;
    out.writeUInt32BE(Math.floor(payload / 2 ** 32), 2);
    out.writeUInt32BE(payload >>> 0, 6);
  }
  out.writeUInt32BE(headBytes, header);
  out.write(head, header + 4, 'utf8');
  out.set(frame.body, header + 4 + headBytes);
  return out;
}
