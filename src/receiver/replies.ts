// The replies the receiver answers with, built once where they never change. No Node module: `cliphook/web`
// shares it.
import { problem, problemHeaders, type ProblemCode } from '../protocol/problem.js';

/** A framework-free reply: the adapters copy it onto their response type. */
export interface ReceiverReply {
  status: number;
  /** Includes `content-length`. */
  headers: Readonly<Record<string, string>>;
  body: string;
}

/**
 * What the shared claim → dispatch (or queue) → complete step ended with; `queued` and `full` only with
 * an inbox.
 */
export type Processed = 'handled' | 'queued' | 'full' | 'processed' | 'in_progress' | 'store_unavailable' | 'failed';

const encoder = new TextEncoder();
const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json' });
const jsonReply = (body: string): ReceiverReply =>
  Object.freeze({ status: 200, headers: Object.freeze({ ...JSON_HEADERS, 'content-length': String(encoder.encode(body).byteLength) }), body });
const ACK = jsonReply('{"received":true}');
const DUPLICATE = jsonReply('{"received":true,"duplicate":true}');
// Stored in the inbox, not yet handled: 202 Accepted says exactly that (any 2xx ends the service's retries).
const QUEUED = Object.freeze({ ...jsonReply('{"received":true,"queued":true}'), status: 202 });
/** Seconds a sender waits after `inbox_full`: the service's own first retry comes after 30 s anyway. */
const INBOX_FULL_RETRY_AFTER_S = 30;
// The service retries after 30 s anyway; a client that honours Retry-After comes back sooner.
const IN_PROGRESS_RETRY_AFTER_S = 5;
/** Seconds a sender waits after `store_unavailable`: long enough for a Redis failover or restart. */
const STORE_RETRY_AFTER_S = 5;

/** The reply to a request whose claim → dispatch step ended with `outcome`. */
export function replyFor(outcome: Processed): ReceiverReply {
  switch (outcome) {
    case 'handled':
      return ACK;
    case 'queued':
      return QUEUED;
    case 'full':
      return reply('inbox_full', 'The webhook inbox is full (maxPending events or maxPendingBytes of bodies waiting); nothing was taken.', { retryAfter: INBOX_FULL_RETRY_AFTER_S });
    case 'processed':
      return DUPLICATE;
    case 'in_progress':
      return reply('delivery_in_progress', 'This delivery is being processed by another request.', { retryAfter: IN_PROGRESS_RETRY_AFTER_S });
    case 'store_unavailable':
      // No handler ran: a 503 with Retry-After tells the sender to come back, rather than a 500 that
      // reads as a handler failure.
      return reply('store_unavailable', 'The delivery store did not answer; nothing was processed.', { retryAfter: STORE_RETRY_AFTER_S });
    case 'failed':
      // Spec section 7: a 5xx body carries no internal detail; the error went to onError listeners.
      return reply('internal_error', 'The webhook handler failed; the delivery will be retried.');
  }
}

/**
 * A problem+json reply with the spec's `code`, its `content-length` counted in bytes. A 408 also says
 * `connection: close` (RFC 9110 §15.5.9): the rest of its body was never read, so the connection cannot
 * carry another request.
 */
export function reply(code: ProblemCode, detail: string, options: { status?: number; retryAfter?: number } = {}): ReceiverReply {
  const body = problem(code, { detail, ...options });
  const text = JSON.stringify(body);
  const headers: Record<string, string> = { ...problemHeaders(body), 'content-length': String(encoder.encode(text).byteLength) };
  if (body.status === 408) headers.connection = 'close';
  return { status: body.status, headers, body: text };
}
