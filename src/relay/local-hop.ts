import { HEADER_DELIVERY, HEADER_EVENT } from '../protocol/headers.js';
import { checkReply, encodeFrame, type EventFrame, type ReplyFrame } from './frames.js';
import { ForwardError, targetUrl, type Forwarder, type LocalReply } from './forward.js';
import { refusalFor, refusalReply, signatureOf, type Refusal } from './gate.js';
import { rawHeader } from './headers.js';
import type { ResolvedListenerOptions } from './listener-options.js';
import type { ListenerEvent, ListenerReply } from './listener-types.js';
import { resign } from './resign.js';

/** An event checked and ready: what `listen` shows, and what it will do with it. */
export interface PreparedEvent {
  event: ListenerEvent;
  /** The frame as it goes to the local app: re-signed when `event.resigned`. */
  outgoing: EventFrame;
  refusal: Refusal | null;
}

/** How one event ends: what `listen` reports, and the frame (encoded) that answers the relay. */
export interface Answer {
  reply: ListenerReply;
  frame: string | Buffer;
}

/**
 * One event's trip to the local app: the listener's own checks (`gate.ts`), re-signing (`resign.ts`), the
 * local request, and the reply or fail frame for the relay. No sockets here: `client.ts` owns those.
 */
export class LocalHop {
  readonly #options: ResolvedListenerOptions;
  readonly #forwarder: Forwarder;

  constructor(options: ResolvedListenerOptions, forwarder: Forwarder) {
    this.#options = options;
    this.#forwarder = forwarder;
  }

  prepare(frame: EventFrame): PreparedEvent {
    const { secret, forwardTo, clock } = this.#options;
    const signature = signatureOf(frame, secret);
    const refusal = refusalFor(frame, signature, this.#options);
    // Re-signed only with the secret the signature verified under (see `SignatureVerdict.secret`).
    const fresh = refusal === null && signature.secret !== null ? resign(frame, signature.secret, clock()) : null;
    const outgoing = fresh ? { ...frame, ...fresh } : frame;
    const event: ListenerEvent = {
      seq: frame.seq,
      method: frame.method,
      url: frame.path || frame.query ? targetUrl(forwardTo, frame).href : forwardTo.href,
      eventName: rawHeader(frame.headers, HEADER_EVENT) ?? null,
      deliveryId: rawHeader(frame.headers, HEADER_DELIVERY) ?? null,
      signatureValid: signature.valid,
      resigned: fresh !== null,
      backlog: frame.backlog,
      replay: frame.replay,
      body: outgoing.body,
      headers: outgoing.headers,
      receivedAt: frame.receivedAt,
    };
    return { event, outgoing, refusal };
  }

  async answer({ event, outgoing, refusal }: PreparedEvent): Promise<Answer> {
    const { seq } = outgoing;
    if (refusal) {
      // Sent as a reply so the sender reads why; it also acknowledges the event, which no retry can mend.
      const own = refusalReply(refusal);
      const reply: ListenerReply = { event, status: own.status, error: null, refused: { code: refusal.code, detail: refusal.reason }, stale: false, durationMs: 0, headers: own.headers, body: own.body };
      return { reply, frame: encodeFrame({ type: 'reply', seq, ...own }) };
    }
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const local = await this.#forwarder.forward(outgoing);
      if (local.status < 200 || local.status > 599) throw new ForwardError('local_unreachable', `the local app answered with status ${local.status}`);
      if (this.#options.secret === undefined && isStaleRefusal(local)) {
        // Not the answer: a `fail` leaves a caught-up event buffered at the relay (a reply would acknowledge
        // it and lose it), and a live event's sender gets 502 and retries with a fresh delivered_at.
        const detail = 'the local app refused it as stale (400 stale_delivery): kept for a later try; restart listen with --secret to re-sign caught-up events';
        const reply: ListenerReply = { event, status: local.status, error: null, refused: null, stale: true, durationMs: elapsed(), headers: local.headers, body: local.body };
        return { reply, frame: encodeFrame({ type: 'fail', seq, code: 'local_unreachable', detail }) };
      }
      const replyFrame: ReplyFrame = { type: 'reply', seq, status: local.status, headers: local.headers, body: local.body };
      const encoded = encodeFrame(replyFrame);
      try {
        checkReply(replyFrame, encoded.length);
      } catch (invalid) {
        // The relay would close the socket (1008/1009) and resend the event: a loop the sender never leaves.
        throw new ForwardError('local_unreachable', `the local reply cannot be relayed: ${(invalid as Error).message}`);
      }
      return { reply: { event, status: local.status, error: null, refused: null, stale: false, durationMs: elapsed(), headers: local.headers, body: local.body }, frame: encoded };
    } catch (error) {
      const { code, message } = error instanceof ForwardError ? error : new ForwardError('local_unreachable', String(error));
      const reply: ListenerReply = { event, status: null, error: { code, detail: message }, refused: null, stale: false, durationMs: elapsed(), headers: [], body: Buffer.alloc(0) };
      return { reply, frame: encodeFrame({ type: 'fail', seq, code, detail: message.slice(0, 1000) }) };
    }
  }
}

/** A receiver's answer to a `delivered_at` outside its replay window: 400 with problem code `stale_delivery`. */
export function isStaleRefusal(local: LocalReply): boolean {
  if (local.status !== 400 || local.body.length > 64 * 1024) return false;
  try {
    return (JSON.parse(local.body.toString('utf8')) as { code?: unknown } | null)?.code === 'stale_delivery';
  } catch {
    return false;
  }
}
