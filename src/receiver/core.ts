import { WebhookHandlerError, WebhookVerificationError } from '../protocol/errors.js';
import type { EventOf, WebhookEvent, WebhookEventName } from '../protocol/events.js';
import { problem, problemHeaders, type ProblemCode } from '../protocol/problem.js';
import type { DeliveryStore } from './delivery-store.js';
import { eventKey } from './event-key.js';
import { parseLimit } from './limit.js';
import type { ReconcileSchedule } from './reconcile-options.js';
import { checkTolerance, normaliseSecrets, type HeaderSource, type VerifiedRequest } from './verify-core.js';
import { Inbox } from './inbox/inbox.js';
import { resolveInboxOptions, type InboxOptions, type ResolvedInboxOptions } from './inbox/options.js';
import { newRecord, type InboxBackend, type InboxSource } from './inbox/record.js';

// This module is shared by the Node entry and `cliphook/web`: no Node module, no Buffer, no process.

export interface ReceiverOptions {
  /** The signing secret shown when the key was created, or `[new, old]` during a rotation. */
  secret: string | readonly string[];
  /**
   * Where processed deliveries are remembered.
   * @default FileDeliveryStore.shared() on '.cliphook/deliveries.json' (the process-wide store); in `cliphook/web`, a MemoryDeliveryStore
   */
  store?: DeliveryStore;
  /**
   * Replay window: how far the signed `delivered_at` may be from now, in seconds, either way; `false` disables.
   * @default 300
   */
  tolerance?: number | false;
  /** Largest body accepted, checked before hashing. @default '256kb' */
  limit?: number | string;
  /**
   * How long a claim holds before another request may take it over, in milliseconds: a process that
   * died mid-handler blocks its delivery no longer than this. Keep it above your slowest handler.
   * @default 60_000
   */
  leaseMs?: number;
  /** Milliseconds since the epoch. @default Date.now */
  clock?: () => number;
  /**
   * Reconcile on a timer (issue 30): at start, then `every` milliseconds after each run, until `close()`.
   * @default off
   * @example reconcile: { apiKey: process.env.API_KEY!, baseUrl: 'https://api.example.com/v1', every: 15 * 60_000 }
   */
  reconcile?: ReconcileSchedule;
  /**
   * A durable inbox (docs/inbox.md): a verified, first-seen event is stored, answered 202 at once, and run
   * by the handlers from there with local retries. `true` keeps it in `inbox.json` beside the delivery store.
   * @default undefined: handlers run before the reply, as without an inbox
   */
  inbox?: true | InboxOptions;
}

/** What a handler learns about the delivery besides the event. */
export interface WebhookContext {
  /** `X-Service-Delivery`: the same on every retry and redelivery. */
  deliveryId: string;
  /** The exact bytes that were signed. */
  rawBody: Uint8Array;
  /** When this receiver took the request. */
  receivedAt: Date;
  /**
   * Issue 30: where the event came from: `'webhook'`, `'reconcile'` (one `receiver.reconcile()` built from
   * GET /videos) or `'replay'` (`receiver.inbox.replay(id)`).
   */
  source: InboxSource;
  /** Issue 30: which run of the handlers this is, from 1; above 1 when the inbox retries it (or after a crash). Without an inbox, 1. */
  attempt: number;
}

/** How `ingest` ended for one event (issue 30 item 2). */
export type IngestOutcome = 'handled' | 'duplicate' | 'failed';

/** Where an event given to `ingest` came from. */
export interface IngestOptions {
  source: 'reconcile';
}

export type WebhookHandler<E extends WebhookEvent = WebhookEvent> = (event: E, context: WebhookContext) => unknown;
export type ErrorListener = (error: WebhookVerificationError | WebhookHandlerError, context: Partial<WebhookContext>) => void;

/** A framework-free reply: the adapters copy it onto their response type. */
export interface ReceiverReply {
  status: number;
  /** Includes `content-length`. */
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** What differs between runtimes: how a request is verified, and the default store. */
export interface ReceiverRuntime {
  /** Throws (or rejects with) a `WebhookVerificationError`; a promise only where the crypto is async. */
  verify(rawBody: Uint8Array, headers: HeaderSource, secrets: readonly string[], tolerance: number | false, now: number): VerifiedRequest | Promise<VerifiedRequest>;
  defaultStore(clock: () => number): DeliveryStore;
  /** The inbox's back end (file or Redis); absent where there is none (`cliphook/web`). */
  openInbox?(options: ResolvedInboxOptions, store: DeliveryStore, clock: () => number): InboxBackend;
}

/**
 * What the shared claim → dispatch (or queue) → complete step ended with; `queued` and `full` only with
 * an inbox.
 */
type Processed = 'handled' | 'queued' | 'full' | 'processed' | 'in_progress' | 'store_unavailable' | 'failed';

const encoder = new TextEncoder();
const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json' });
// Claim owners: unique across processes sharing a store (random prefix) and cheap per request (counter).
// The prefix is drawn on first use: Workers refuse random values at module scope.
let ownerPrefix: string | undefined;
let ownerCount = 0;
const jsonReply = (body: string): ReceiverReply =>
  Object.freeze({ status: 200, headers: Object.freeze({ ...JSON_HEADERS, 'content-length': String(encoder.encode(body).byteLength) }), body });
const ACK = jsonReply('{"received":true}');
const DUPLICATE = jsonReply('{"received":true,"duplicate":true}');
// Issue 30 item 1: stored in the inbox, not yet handled: 202 Accepted says exactly that (any 2xx ends the service's retries).
const QUEUED = Object.freeze({ ...jsonReply('{"received":true,"queued":true}'), status: 202 });
/** Seconds a sender waits after `inbox_full`: the service's own first retry comes after 30 s anyway. */
const INBOX_FULL_RETRY_AFTER_S = 30;
const decoder = new TextDecoder();
// The service retries after 30 s anyway; a client that honours Retry-After comes back sooner.
const IN_PROGRESS_RETRY_AFTER_S = 5;
/** Seconds a sender waits after `store_unavailable`: long enough for a Redis failover or restart. */
const STORE_RETRY_AFTER_S = 5;

/**
 * The receiver: verification, dedupe and dispatch, independent of any framework and runtime. The
 * adapters only read the body and headers and write the reply; the runtime brings the crypto.
 */
export class ReceiverCore {
  readonly store: DeliveryStore;
  readonly limit: number;
  readonly #secrets: readonly string[];
  readonly #tolerance: number | false;
  readonly #leaseMs: number;
  readonly #clock: () => number;
  readonly #runtime: ReceiverRuntime;
  readonly #handlers = new Map<WebhookEventName, WebhookHandler<never>[]>();
  readonly #any: WebhookHandler[] = [];
  readonly #errorListeners: ErrorListener[] = [];
  /** Issue 30: the durable inbox, when the receiver has one (`inbox` option). */
  readonly inbox: Inbox | undefined;

  constructor({ secret, store, tolerance = 300, limit = '256kb', leaseMs = 60_000, clock = Date.now, inbox }: ReceiverOptions, runtime: ReceiverRuntime) {
    this.#secrets = normaliseSecrets(secret);
    this.#tolerance = checkTolerance(tolerance);
    this.limit = parseLimit(limit);
    if (!(Number.isFinite(leaseMs) && leaseMs > 0)) throw new TypeError(`Expected \`leaseMs\` to be a positive number, got ${leaseMs}.`);
    if (typeof clock !== 'function') throw new TypeError(`Expected \`clock\` to be a function returning milliseconds, got ${typeof clock}.`);
    this.#leaseMs = leaseMs;
    this.#clock = clock;
    this.#runtime = runtime;
    const resolved = inbox === undefined ? undefined : resolveInboxOptions(inbox);
    // Issue 30 follow-up item 1: an event larger than the whole budget would be refused forever.
    if (resolved && resolved.maxPendingBytes < this.limit) throw new TypeError(`Expected \`inbox.maxPendingBytes\` (${resolved.maxPendingBytes}) to be at least \`limit\` (${this.limit}), so that one event always fits.`);
    if (resolved && !runtime.openInbox) throw new TypeError('Expected no `inbox` here: the inbox needs a file or Redis, so the Node entry (cliphook), not cliphook/web.');
    this.store = store ?? runtime.defaultStore(clock);
    if (resolved) {
      const backend = runtime.openInbox!(resolved, this.store, clock);
      this.inbox = new Inbox(backend, resolved, {
        leaseMs,
        clock,
        dispatch: (event, context) => this.#dispatch(event, context),
        ready: () => this.#any.length > 0 || this.#handlers.size > 0,
        onError: (error, context) => this.#emitError(new WebhookHandlerError(context?.deliveryId ?? 'inbox', error), context ?? {}, 500),
      }, resolved.redis !== undefined);
    }
  }

  /** Runs `handler` for every verified, first-time delivery of the named event. */
  on<N extends WebhookEventName>(name: N, handler: WebhookHandler<EventOf<N>>): this {
    if (typeof handler !== 'function') throw new TypeError(`Expected a handler function for ${name}.`);
    const list = this.#handlers.get(name) ?? [];
    list.push(handler as WebhookHandler<never>);
    this.#handlers.set(name, list);
    this.inbox?.kick();
    return this;
  }

  /** Runs `handler` for every verified, first-time delivery, whatever the event. */
  onAny(handler: WebhookHandler): this {
    if (typeof handler !== 'function') throw new TypeError('Expected a handler function.');
    this.#any.push(handler);
    this.inbox?.kick();
    return this;
  }

  /**
   * Hears every refused request and every handler failure: for logs and alerts. Until one is registered,
   * the failures answered with a 5xx (a handler that threw, a store that failed, a body a parser took
   * first) are logged with `console.error`, as Express logs an error no handler took.
   */
  onError(listener: ErrorListener): this {
    if (typeof listener !== 'function') throw new TypeError('Expected an error listener function.');
    this.#errorListeners.push(listener);
    return this;
  }

  /**
   * The core: answers one request given its raw body and headers. Never throws; every outcome is a reply.
   */
  async receive(rawBody: Uint8Array, headers: HeaderSource): Promise<ReceiverReply> {
    const receivedAt = this.#clock();
    let verified;
    try {
      if (rawBody.byteLength > this.limit) throw new WebhookVerificationError('body_too_large', 413, `The body is larger than ${this.limit} bytes.`);
      verified = this.#runtime.verify(rawBody, headers, this.#secrets, this.#tolerance, receivedAt);
      if (isThenable(verified)) verified = await verified;
    } catch (error) {
      return this.refuse(error);
    }
    const { deliveryId, event } = verified;
    // X-Service-Delivery is not signed, so the signed event is claimed too (event-key.ts): a captured
    // request replayed under a forged delivery id finds its event already processed.
    const keys = [`d:${deliveryId}`, eventKey(event)];
    const context: WebhookContext = { deliveryId, rawBody, receivedAt: new Date(receivedAt), source: 'webhook', attempt: 1 };
    switch (await this.#claimAndRun(keys, event, context)) {
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
   * Hands an event that did not come as a webhook (issue 30 item 2: one `reconcile()` rebuilt from GET
   * /videos) to the same dedupe and handlers. It claims the event key alone, `e:<event>:<clip id>`, so an
   * event a webhook already delivered is a `'duplicate'`, and a webhook arriving after it is one too.
   * `'failed'` when a handler threw (the claim is released, so a later run tries again), when the store
   * did not answer, or when the same event is being handled right now; failures reach `onError`. With an
   * inbox, `'handled'` means durably taken into it (its handlers run from there, `source: 'reconcile'`),
   * and a full inbox is `'failed'`.
   * @example const outcome = await receiver.ingest(event, { source: 'reconcile' }); // 'handled' | 'duplicate' | 'failed'
   */
  async ingest(event: WebhookEvent, { source }: IngestOptions): Promise<IngestOutcome> {
    if (source !== 'reconcile') throw new TypeError(`Expected \`source\` to be 'reconcile', got ${JSON.stringify(source)}.`);
    const context: WebhookContext = {
      deliveryId: `${source}:${event.event}:${event.id}`,
      rawBody: encoder.encode(JSON.stringify(event)),
      receivedAt: new Date(this.#clock()),
      source,
      attempt: 1,
    };
    const outcome = await this.#claimAndRun([eventKey(event)], event, context);
    if (outcome === 'handled' || outcome === 'queued') return 'handled';
    if (outcome === 'processed') return 'duplicate';
    // In progress elsewhere: not handled by this run, so it is reported as failed and seen again next time.
    return 'failed';
  }

  /**
   * The step `receive` and `ingest` share: claim the keys, run the handlers (or, with an inbox, store the
   * event durably), mark the keys processed. Failures are told to the error listeners here; the caller
   * turns the outcome into its answer.
   */
  async #claimAndRun(keys: readonly string[], event: WebhookEvent, context: WebhookContext): Promise<Processed> {
    // Identifies this claim, so a request whose lease expired cannot release its successor's.
    const owner = `${(ownerPrefix ??= `${crypto.randomUUID()}:`)}${++ownerCount}`;
    // Promises are awaited only where a store or a handler returns one: every await is a turn of the
    // microtask queue on the hot path (bench/middleware.ts).
    let outcome;
    try {
      outcome = this.store.claim(keys, this.#leaseMs, owner);
      if (typeof outcome !== 'string') outcome = await outcome;
    } catch (error) {
      this.#emitError(new WebhookHandlerError(context.deliveryId, error), context, 503);
      return 'store_unavailable';
    }
    if (outcome !== 'claimed') return outcome;
    if (this.inbox) return this.#queue(this.inbox, keys, event, context, owner);
    try {
      const ran = this.#dispatch(event, context);
      if (isThenable(ran)) await ran;
    } catch (error) {
      try {
        await this.store.release(keys, owner);
      } catch {
        // The claim then expires with its lease; the outcome is the handler's failure either way.
      }
      this.#emitError(new WebhookHandlerError(context.deliveryId, error), context, 500);
      return 'failed';
    }
    try {
      await this.store.complete(keys);
    } catch (error) {
      // The handlers ran but the mark may not be durable: the sender retries, and whether the retry
      // runs them again depends on what the store kept (at-least-once either way).
      this.#emitError(new WebhookHandlerError(context.deliveryId, error), context, 500);
      return 'failed';
    }
    return 'handled';
  }

  /**
   * Issue 30 item 1: stores a claimed event in the inbox, then completes the claim, so a later delivery is
   * a duplicate. A refusal releases the claim, so the sender's retry is a first delivery, not a duplicate.
   */
  async #queue(inbox: Inbox, keys: readonly string[], event: WebhookEvent, context: WebhookContext, owner: string): Promise<Processed> {
    const record = newRecord(context.deliveryId, event.event, decoder.decode(context.rawBody), keys, context.source, context.receivedAt.getTime());
    let added;
    try {
      added = await inbox.enqueue(record);
    } catch (error) {
      await this.#release(keys, owner);
      this.#emitError(new WebhookHandlerError(context.deliveryId, error), context, 503);
      return 'store_unavailable';
    }
    if (added === 'full') {
      await this.#release(keys, owner);
      return 'full';
    }
    try {
      await this.store.complete(keys);
    } catch (error) {
      // The event is durably queued and runs from the inbox; a retry the mark missed finds it there ('exists').
      this.#emitError(new WebhookHandlerError(context.deliveryId, error), context, 500);
    }
    return 'queued';
  }

  async #release(keys: readonly string[], owner: string): Promise<void> {
    try {
      await this.store.release(keys, owner);
    } catch {
      // The claim then expires with its lease; the outcome is the same either way.
    }
  }

  /** The reply for an error thrown while reading or verifying a request. */
  refuse(error: unknown, context: Partial<WebhookContext> = {}): ReceiverReply {
    if (!(error instanceof WebhookVerificationError)) throw error;
    this.#emitError(error, context, error.status);
    const detail = error.message;
    return reply(error.code, detail, { status: error.status });
  }

  /**
   * Stops taking events, lets running inbox handlers finish (up to `inbox.closeTimeout`), keeps the
   * rest for the next start, and flushes the store.
   */
  async close(): Promise<void> {
    await this.inbox?.close();
    await this.store.close();
  }

  /** Runs the handlers; a single one is called directly, so its own promise is the only one awaited. */
  #dispatch(event: WebhookEvent, context: WebhookContext): unknown {
    const named = this.#handlers.get(event.event);
    const any = this.#any;
    const count = (named?.length ?? 0) + any.length;
    if (count === 0) return undefined; // acknowledged and recorded, so it is not retried forever
    if (count === 1) return ((named?.[0] ?? any[0]) as WebhookHandler)(event, context);
    const runs = [...(named ?? []), ...any].map(async (handler) => (handler as WebhookHandler)(event, context));
    return Promise.allSettled(runs).then((results) => {
      const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed) throw failed.reason;
    });
  }

  /** Tells the listeners; with none, a failure answered with a 5xx (the app's, not the sender's) goes to console.error. */
  #emitError(error: WebhookVerificationError | WebhookHandlerError, context: Partial<WebhookContext>, status: number): void {
    // Issue 20 item 15: with no listener a throwing handler was a silent 500. Express's final handler logs
    // such errors by default; a 4xx is the sender's mistake (and anyone may send one), so it is not logged.
    if (this.#errorListeners.length === 0) {
      if (status >= 500) {
        const delivery = context.deliveryId === undefined ? '' : ` delivery ${context.deliveryId}:`;
        console.error(`cliphook receiver:${delivery} answered ${status} (${error.code}). Register receiver.onError(listener) to handle these yourself.`, error);
      }
      return;
    }
    for (const listener of this.#errorListeners) {
      try {
        listener(error, context);
      } catch {
        // A throwing listener must not change the reply the sender gets.
      }
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as PromiseLike<unknown>).then === 'function';
}

function reply(code: ProblemCode, detail: string, options: { status?: number; retryAfter?: number } = {}): ReceiverReply {
  const body = problem(code, { detail, ...options });
  const text = JSON.stringify(body);
  return { status: body.status, headers: { ...problemHeaders(body), 'content-length': String(encoder.encode(text).byteLength) }, body: text };
}
