import pRetry, { AbortError } from 'p-retry';
import { version } from '../version.js';
import { HEADER_DELIVERY, HEADER_EVENT, HEADER_SIGNATURE } from '../protocol/headers.js';
import { classifyReply, type ReplyClass } from '../protocol/schedule.js';
import { sign } from '../protocol/signature.js';
import { InvalidCallbackUrlError } from '../protocol/errors.js';
import { createFetchTransport, createHttpTransport, type FetchFunction, type Transport, type TransportReply } from './transport.js';
import { checkCallbackUrl } from './url-guard.js';
import type { LookupFunction } from '../http/outbound-guard.js';
import type { DeliveryAttempt, DeliveryRecord, EmitterClock } from './types.js';

export interface AttemptOptions {
  transport: Transport;
  /** Checked again on every attempt: a record stored under a laxer policy must not slip through. */
  allowPrivateNetworks: boolean;
  clock: EmitterClock;
  timeoutMs: number;
  userAgent: string;
  /** The `deliveredAt` option: the time of an attempt of `record`, when not the clock's. */
  deliveredAt?: ((record: Readonly<DeliveryRecord>) => number | undefined) | undefined;
}

/** What an emitter's options say about its attempts; every backend builds its `AttemptOptions` from them. */
export interface AttemptSettings {
  allowPrivateNetworks: boolean;
  clock: EmitterClock;
  timeoutMs: number;
  concurrency: number;
  fetch: FetchFunction | undefined;
  lookup: LookupFunction | undefined;
  wrapTransport?: ((next: Transport) => Transport) | undefined;
  deliveredAt?: ((record: Readonly<DeliveryRecord>) => number | undefined) | undefined;
}

/**
 * The transport and settings of one emitter's attempts: the injected `fetch`, or the built-in client with
 * one keep-alive socket per slot of `concurrency`. `close()` frees the sockets.
 */
export function createAttemptOptions(settings: AttemptSettings): AttemptOptions & { close(): void } {
  const { allowPrivateNetworks, clock, timeoutMs, concurrency, fetch, lookup, wrapTransport, deliveredAt } = settings;
  const base: Transport & { close?(): void } = fetch
    ? createFetchTransport(fetch)
    : createHttpTransport({ allowPrivateNetworks, maxSockets: concurrency, lookup });
  let transport: unknown = base;
  try {
    if (wrapTransport) transport = wrapTransport(base);
    if (typeof transport !== 'function') throw new TypeError(`Expected \`wrapTransport\` to return a transport function, got ${transport === null ? 'null' : typeof transport}.`);
  } catch (error) {
    base.close?.();
    throw error;
  }
  return { transport: transport as Transport, allowPrivateNetworks, clock, timeoutMs, userAgent: `cliphook/${version}`, deliveredAt, close: () => base.close?.() };
}

/**
 * Milliseconds until the next attempt of a delivery whose latest attempt (already in `attempts`) ended with
 * `outcome`, or `undefined` when it is over: delivered, permanent, `retry: false`, or the schedule of the
 * current round (it began at `round`) used up.
 */
export function nextDelay(record: Pick<DeliveryRecord, 'attempts' | 'round' | 'retry'>, outcome: ReplyClass, schedule: readonly number[]): number | undefined {
  return outcome === 'retry' && record.retry ? schedule[record.attempts.length - record.round - 1] : undefined;
}

/** An attempt as recorded, and what the schedule makes of it. */
export interface AttemptResult {
  attempt: DeliveryAttempt;
  outcome: ReplyClass;
}

// Errors that happen before any byte of a reply: a reused keep-alive socket the receiver had closed,
// a DNS hiccup. Retrying them at once costs nothing; anything else waits for the schedule.
const QUICK_RETRY_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'EAI_AGAIN', 'UND_ERR_SOCKET']);
const QUICK_RETRIES = 2;

class AttemptTimeoutError extends Error {
  constructor(ms: number) {
    super(`timeout after ${ms} ms`);
    this.name = 'AttemptTimeoutError';
  }
}

/**
 * Builds the body for an attempt made at `at`: the stored payload with `delivered_at` set to that time.
 * The payload was serialised once at `send()`, so this only appends one member.
 */
export function bodyAt(payload: string, at: number): string {
  return `${payload.slice(0, -1)},"delivered_at":"${new Date(at).toISOString()}"}`;
}

/**
 * Makes one attempt of a delivery: sets `delivered_at`, signs those exact bytes, POSTs them, and
 * records the reply. Never throws: every failure is an attempt with an `error`.
 */
export async function attemptDelivery(record: DeliveryRecord, options: AttemptOptions): Promise<AttemptResult> {
  const { transport, clock, timeoutMs, userAgent } = options;
  const started = clock.now();
  let at = started;
  try {
    if (options.deliveredAt) at = attemptTime(options.deliveredAt, record, started);
  } catch (error) {
    // A public hook that throws fails this attempt (retried on the schedule), never the emitter.
    return { attempt: { at, status: null, error: describe(error), latencyMs: clock.now() - started, response: null }, outcome: 'retry' };
  }
  const body = Buffer.from(bodyAt(record.payload, at), 'utf8');
  const headers = {
    'content-type': 'application/json',
    'user-agent': userAgent,
    [HEADER_EVENT]: record.event,
    [HEADER_SIGNATURE]: sign(body, record.secret),
    [HEADER_DELIVERY]: record.id,
  };
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(new AttemptTimeoutError(timeoutMs)), timeoutMs);
  try {
    const url = checkCallbackUrl(record.url, options);
    const once = () => transport({ url, headers, body, signal: controller.signal });
    // Most attempts succeed or fail for good on the first try, so p-retry (and its per-call cost) only
    // steps in once a quick-retryable error happened: at once, then after 20 ms.
    const reply = await once().catch((error: unknown) => {
      if (!isQuickRetryable(error, controller.signal)) throw error;
      return pRetry(
        async () => {
          try {
            return await once();
          } catch (retryError) {
            if (!isQuickRetryable(retryError, controller.signal)) throw new AbortError(toError(controller.signal.aborted ? controller.signal.reason : retryError));
            throw retryError;
          }
        },
        { retries: QUICK_RETRIES - 1, minTimeout: 20, factor: 1, randomize: false, signal: controller.signal },
      );
    });
    if (!isReply(reply)) throw new TypeError('Expected the transport (`wrapTransport`) to resolve to { status: an integer, body: a Buffer }.');
    const latencyMs = clock.now() - started;
    const attempt: DeliveryAttempt = { at, status: reply.status, error: null, latencyMs, response: keptText(reply.body) };
    return { attempt, outcome: classifyReply(reply.status) };
  } catch (caught) {
    const error = controller.signal.aborted ? (controller.signal.reason as Error) : (caught as Error);
    const attempt: DeliveryAttempt = { at, status: null, error: describe(error), latencyMs: clock.now() - started, response: null };
    // A refused address stays refused: retrying a rebinding name would only knock on the same door.
    const outcome = error instanceof InvalidCallbackUrlError ? 'permanent' : classifyReply(error);
    return { attempt, outcome };
  } finally {
    clock.clearTimeout(timer);
  }
}

/**
 * The kept bytes of a response as text. They were cut at 1 KiB, perhaps inside a multi-byte character:
 * a streaming decode holds back an incomplete last character instead of turning it into U+FFFD.
 */
export function keptText(body: Buffer): string {
  return new TextDecoder('utf-8').decode(body, { stream: true });
}

/** The `deliveredAt` hook's time of an attempt, checked: `undefined` is the clock's `started`. */
function attemptTime(hook: (record: Readonly<DeliveryRecord>) => number | undefined, record: DeliveryRecord, started: number): number {
  const at = hook(record);
  if (at === undefined) return started;
  // Date's own range: anything else has no ISO form for delivered_at.
  if (typeof at !== 'number' || !Number.isFinite(at) || Math.abs(at) > 8.64e15) {
    throw new TypeError(`Expected \`deliveredAt\` to return milliseconds since the epoch or undefined, got ${typeof at === 'number' ? at : typeof at}.`);
  }
  return at;
}

/** Whether a transport's answer is a reply (a wrapper of the user's may answer anything). */
function isReply(reply: unknown): reply is TransportReply {
  return typeof reply === 'object' && reply !== null && Number.isInteger((reply as TransportReply).status) && (reply as TransportReply).body instanceof Uint8Array;
}

/** A connection error before any response, while the attempt still has time. */
function isQuickRetryable(error: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && error instanceof Error && QUICK_RETRY_CODES.has((error as NodeJS.ErrnoException).code ?? '');
}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function describe(error: unknown): string {
  if (error instanceof InvalidCallbackUrlError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
