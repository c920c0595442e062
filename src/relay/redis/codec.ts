import type { StoredEvent } from '../channel-types.js';
import type { FailCode } from '../frames.js';
import type { Outcome } from '../pending.js';

/**
 * What the relay keeps in Redis and sends between its processes, in the frames' own shape: a 4-byte
 * big-endian length, that many bytes of JSON head, then the body bytes untouched, so a body is never
 * base64'd or re-serialised on its way through Redis (the bytes the sender signed are the bytes the local
 * app reads, whichever process took them).
 */

export function pack(head: object, body: Uint8Array): Buffer {
  const json = JSON.stringify(head);
  const headBytes = Buffer.byteLength(json);
  const out = Buffer.allocUnsafe(4 + headBytes + body.length);
  out.writeUInt32BE(headBytes, 0);
  out.write(json, 4, 'utf8');
  out.set(body, 4 + headBytes);
  return out;
}

export function unpack<T>(bytes: Buffer): { head: T; body: Buffer } {
  const end = 4 + bytes.readUInt32BE(0);
  return { head: JSON.parse(bytes.toString('utf8', 4, end)) as T, body: bytes.subarray(end) };
}

type EventHead = Omit<StoredEvent, 'seq' | 'body'>;

/** An event as its buffer keeps it (the sequence number is its field's name). */
export function packEvent(event: Omit<StoredEvent, 'seq'>): Buffer {
  const { receivedAt, method, path, query, headers, eventName, deliveryId, body } = event;
  return pack({ receivedAt, method, path, query, headers, eventName, deliveryId } satisfies EventHead, body);
}

export function unpackEvent(seq: number, bytes: Buffer): StoredEvent {
  const { head, body } = unpack<EventHead>(bytes);
  return { seq, ...head, body };
}

/** A live event published to the other processes: who took it (their answers go back there) and the event. */
export function packLive(origin: string, event: StoredEvent): Buffer {
  const { body, ...head } = event;
  return pack({ ...head, origin }, body);
}

export function unpackLive(bytes: Buffer): { origin: string; event: StoredEvent } {
  const { head, body } = unpack<Omit<StoredEvent, 'body'> & { origin: string }>(bytes);
  const { origin, ...event } = head;
  return { origin, event: { ...event, body } };
}

interface AnswerHead {
  channel: string;
  seq: number;
  kind: 'reply' | 'fail' | 'gone';
  status?: number;
  headers?: string[];
  code?: FailCode;
  detail?: string;
}

/** A process's answer to a live event: the local reply byte for byte, a fail, or `gone`. */
export function packAnswer(channel: string, seq: number, outcome: Outcome): Buffer {
  switch (outcome.kind) {
    case 'reply': {
      const { status, headers, body } = outcome.frame;
      return pack({ channel, seq, kind: 'reply', status, headers } satisfies AnswerHead, body);
    }
    case 'fail': {
      const { code, detail } = outcome.frame;
      return pack({ channel, seq, kind: 'fail', code, detail } satisfies AnswerHead, Buffer.alloc(0));
    }
    default:
      return pack({ channel, seq, kind: 'gone' } satisfies AnswerHead, Buffer.alloc(0));
  }
}

export function unpackAnswer(bytes: Buffer): { channel: string; seq: number; outcome: Outcome } {
  const { head, body } = unpack<AnswerHead>(bytes);
  const { channel, seq } = head;
  if (head.kind === 'reply') return { channel, seq, outcome: { kind: 'reply', frame: { type: 'reply', seq, status: head.status!, headers: head.headers!, body } } };
  if (head.kind === 'fail') return { channel, seq, outcome: { kind: 'fail', frame: { type: 'fail', seq, code: head.code!, detail: head.detail ?? '' } } };
  return { channel, seq, outcome: { kind: 'gone' } };
}
