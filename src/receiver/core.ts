import { HandlerTimeoutError, WebhookHandlerError, WebhookVerificationError } from '../protocol/errors.js';
import type { EventOf, WebhookEvent, WebhookEventName } from '../protocol/events.js';
import { HandlerContext, RunDeadline } from './deadline.js';
import { Handlers, isThenable } from './handlers.js';
import { HOST_TIMERS } from './host-timers.js';
import type { DeliveryStore } from './delivery-store.js';
import { ErrorListeners, type ErrorListener } from './error-listeners.js';
import { checkNamespace, eventKey } from './event-key.js';
import { DEFAULT_BODY_TIMEOUT, checkBodyTimeout, parseLimit } from './limit.js';
import type { IngestOptions, IngestOutcome, ReceiverOptions, ReceiverRuntime, WebhookContext, WebhookHandler } from './receiver-types.js';
import { reply, replyFor, type Processed, type ReceiverReply } from './replies.js';
import { checkTolerance, normaliseSecrets, type HeaderSource } from './verify-core.js';
import { Inbox } from './inbox/inbox.js';
import { resolveInboxOptions } from './inbox/options.js';
import { newRecord } from './inbox/record.js';
import { Reconciler } from './reconcile.js';
import { checkSchedule, type ReconcileOptions, type ReconcileResult } from './reconcile-options.js';

// This module is shared by the Node entry and `cliphook/web`: no Node module, no Buffer, no process.

export type { ErrorListener } from './error-listeners.js';
export type { IngestOptions, IngestOutcome, ReceiverOptions, ReceiverRuntime, WebhookContext, WebhookHandler } from './receiver-types.js';
export type { ReceiverReply } from './replies.js';

const encoder = new TextEncoder();
/** A delivery's context before a run gives it its `signal`. */
type DeliveryContext = Omit<WebhookContext, 'signal'>;
// Claim owners: unique across processes sharing a store (random prefix) and cheap per request (counter).
// The prefix is drawn on first use: Workers refuse random values at module scope.
let ownerPrefix: string | undefined;
let ownerCount = 0;

/**
 * The receiver: verification, dedupe and dispatch, independent of any framework and runtime. The
 * adapters only read the body and headers and write the reply; the runtime brings the crypto.
 */
export class ReceiverCore {
  readonly store: DeliveryStore;
  readonly limit: number;
  /** The `bodyTimeout` option: how long an adapter may take to read one body, in milliseconds. */
  readonly bodyTimeout: number;
  /** The `namespace` option: what every event key and the reconcile cursor are kept under. */
  readonly namespace: string | undefined;
  readonly #secrets: readonly string[];
  readonly #tolerance: number | false;
  readonly #leaseMs: number;
  readonly #clock: () => number;
  readonly #runtime: ReceiverRuntime;
  readonly #handlers = new Handlers();
  readonly #errors = new ErrorListeners();
  /** The durable inbox, when the receiver has one (`inbox` option). */
  readonly inbox: Inbox | undefined;
  readonly #reconciler: Reconciler;
  /** Marks of queued events still being written (`#queue`): `close()` waits for them. */
  readonly #marking = new Set<Promise<void>>();

  constructor({ secret, store, tolerance = 300, limit = '256kb', bodyTimeout = DEFAULT_BODY_TIMEOUT, leaseMs = 60_000, clock = Date.now, inbox, reconcile, namespace }: ReceiverOptions, runtime: ReceiverRuntime) {
    this.#secrets = normaliseSecrets(secret);
    this.namespace = checkNamespace(namespace);
    this.#tolerance = checkTolerance(tolerance);
    this.limit = parseLimit(limit);
    this.bodyTimeout = checkBodyTimeout(bodyTimeout);
    if (!(Number.isFinite(leaseMs) && leaseMs > 0)) throw new TypeError(`Expected \`leaseMs\` to be a positive number, got ${leaseMs}.`);
    if (typeof clock !== 'function') throw new TypeError(`Expected \`clock\` to be a function returning milliseconds, got ${typeof clock}.`);
    // Before the store and the inbox are opened: a refused schedule must leave no lock or connection behind.
    if (reconcile !== undefined) checkSchedule(reconcile);
    this.#leaseMs = leaseMs;
    this.#clock = clock;
    this.#runtime = runtime;
    const resolved = inbox === undefined ? undefined : resolveInboxOptions(inbox);
    // An event larger than the whole budget would be refused forever.
    if (resolved && resolved.maxPendingBytes < this.limit) throw new TypeError(`Expected \`inbox.maxPendingBytes\` (${resolved.maxPendingBytes}) to be at least \`limit\` (${this.limit}), so that one event always fits.`);
    if (resolved && !runtime.openInbox) throw new TypeError('Expected no `inbox` here: the inbox needs a file or Redis, so the Node entry (cliphook), not cliphook/web.');
    this.store = store ?? runtime.defaultStore(clock);
    if (resolved) {
      const backend = runtime.openInbox!(resolved, this.store, clock, this.namespace);
      this.inbox = new Inbox(backend, resolved, {
        leaseMs,
        clock,
        dispatch: (event, context) => this.#handlers.dispatch(event, context),
        ready: () => this.#handlers.ready,
        // With a context a handler run failed; without one the inbox itself (opening it, a poll, a settle).
        onError: (error, context) => this.#errors.emit(new WebhookHandlerError(context?.deliveryId ?? 'inbox', error, context ? 'handler' : 'inbox'), context ?? {}, context ? 500 : 503),
      }, resolved.redis !== undefined);
    }
    this.#reconciler = new Reconciler(this, runtime.reconcileCursor(this.store, this.namespace), clock, (error, context) => this.#errors.emit(error, context, error.status));
    if (reconcile !== undefined) this.#reconciler.start(reconcile);
  }

  /**
   * Hands every clip that ended since `since` (default: where the last run got to) to the
   * handlers as the event its webhook carries, through the same dedupe: what a webhook already delivered
   * is a duplicate, and so is a webhook that arrives later. Runs one at a time: a call during a run joins
   * it when its options are the same, and rejects at once with `reconcile_in_progress` otherwise; each GET
   * and each run has a deadline (`requestTimeout`, `runTimeout`). The cursor is kept beside
   * the store on Node (a file beside the deliveries file, the same Redis, or memory) and in memory in
   * `cliphook/web` (on Workers, run it from a Cron Trigger with an explicit `since`). Rejects with
   * `ReconcileError` when it could not list every clip (then nothing was handled) or ran past `runTimeout`;
   * the cursor of a run that rejects does not move.
   * @example const { checked, handled, duplicates, failed } = await receiver.reconcile({ apiKey, baseUrl: 'https://api.example.com/v1', since: new Date(Date.now() - 4 * 3600_000) });
   */
  reconcile(options: ReconcileOptions): Promise<ReconcileResult> {
    return this.#reconciler.run(options);
  }

  /** Runs `handler` for every verified, first-time delivery of the named event. */
  on<N extends WebhookEventName>(name: N, handler: WebhookHandler<EventOf<N>>): this {
    this.#handlers.add(name, handler as WebhookHandler<never>);
    this.inbox?.kick();
    return this;
  }

  /** Runs `handler` for every verified, first-time delivery, whatever the event. */
  onAny(handler: WebhookHandler): this {
    this.#handlers.add(null, handler as WebhookHandler<never>);
    this.inbox?.kick();
    return this;
  }

  /**
   * Hears every refused request and every handler failure: for logs and alerts. Until one is registered,
   * the failures answered with a 5xx (a handler that threw, a store that failed, a body a parser took
   * first) are logged with `console.error`, as Express logs an error no handler took.
   */
  onError(listener: ErrorListener): this {
    this.#errors.add(listener);
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
    const context: DeliveryContext = { deliveryId, rawBody, receivedAt: new Date(receivedAt), source: 'webhook', attempt: 1 };
    return replyFor(await this.#claimAndRun(event, context, verified.text));
  }

  /**
   * Hands an event that did not come as a webhook (one `reconcile()` rebuilt from GET
   * /videos) to the same dedupe and handlers. It claims the event key alone, `e:<event>:<clip id>` (in the
   * receiver's `namespace`), so an event a webhook already delivered is a `'duplicate'`, and a webhook
   * arriving after it is one too.
   * `'failed'` when a handler threw (the claim is released, so a later run tries again), when the store
   * did not answer, or when the same event is being handled right now; failures reach `onError`. With an
   * inbox, `'handled'` means durably taken into it (its handlers run from there, `source: 'reconcile'`),
   * and a full inbox is `'failed'`.
   * @example const outcome = await receiver.ingest(event, { source: 'reconcile' }); // 'handled' | 'duplicate' | 'failed'
   */
  async ingest(event: WebhookEvent, { source }: IngestOptions): Promise<IngestOutcome> {
    if (source !== 'reconcile') throw new TypeError(`Expected \`source\` to be 'reconcile', got ${JSON.stringify(source)}.`);
    const text = JSON.stringify(event);
    const context: DeliveryContext = {
      deliveryId: `${source}:${event.event}:${event.id}`,
      rawBody: encoder.encode(text),
      receivedAt: new Date(this.#clock()),
      source,
      attempt: 1,
    };
    const outcome = await this.#claimAndRun(event, context, text);
    if (outcome === 'handled' || outcome === 'queued') return 'handled';
    if (outcome === 'processed') return 'duplicate';
    // In progress elsewhere: not handled by this run, so it is reported as failed and seen again next time.
    return 'failed';
  }

  /**
   * The step `receive` and `ingest` share: claim the event's key, run the handlers (or, with an inbox, store
   * the event durably, as `text`), mark the key processed. Failures are told to the error listeners here;
   * the caller turns the outcome into its answer.
   */
  async #claimAndRun(event: WebhookEvent, context: DeliveryContext, text: string): Promise<Processed> {
    // One key, from the signed body (event-key.ts): every delivery of one X-Service-Delivery carries one
    // event, so the event key catches its retries too, and a captured request replayed under a forged
    // delivery id finds its event already processed.
    const keys = [eventKey(event, this.namespace)];
    // Identifies this claim, so a request whose lease expired cannot release its successor's.
    const owner = `${(ownerPrefix ??= `${crypto.randomUUID()}:`)}${++ownerCount}`;
    // Promises are awaited only where a store or a handler returns one: every await is a turn of the
    // microtask queue on the hot path (bench/middleware.ts).
    let outcome;
    try {
      outcome = this.store.claim(keys, this.#leaseMs, owner);
      if (typeof outcome !== 'string') outcome = await outcome;
    } catch (error) {
      this.#errors.emit(new WebhookHandlerError(context.deliveryId, error, 'store'), context, 503);
      return 'store_unavailable';
    }
    if (outcome !== 'claimed') return outcome;
    if (this.inbox) return this.#queue(this.inbox, keys, event, context, owner, text);
    const deadline = new RunDeadline();
    const run: WebhookContext = new HandlerContext(context, deadline);
    try {
      const ran = this.#handlers.dispatch(event, run);
      // Past `leaseMs` the claim lapses and the sender's retry may run the event again: this run is then
      // abandoned as failed, so a late end writes no mark of its own.
      if (isThenable(ran)) await deadline.race(ran, this.#leaseMs, HOST_TIMERS, () => new HandlerTimeoutError('leaseMs', this.#leaseMs));
    } catch (error) {
      await this.#release(keys, owner);
      this.#errors.emit(new WebhookHandlerError(context.deliveryId, error), context, 500);
      return 'failed';
    }
    try {
      await this.store.complete(keys);
    } catch (error) {
      // The handlers ran but the mark may not be durable: the sender retries, and whether the retry
      // runs them again depends on what the store kept (at-least-once either way).
      this.#errors.emit(new WebhookHandlerError(context.deliveryId, error), context, 500);
      return 'failed';
    }
    return 'handled';
  }

  /**
   * Stores a claimed event in the inbox, then completes the claim, so a later delivery is
   * a duplicate. A refusal releases the claim, so the sender's retry is a first delivery, not a duplicate.
   */
  async #queue(inbox: Inbox, keys: readonly string[], event: WebhookEvent, context: DeliveryContext, owner: string, text: string): Promise<Processed> {
    // Identified by its event key, as the claim is: a different event under a delivery id already seen is
    // a new record, and the same event under another delivery id is the one already stored. The body as
    // text: verification decoded it already.
    const record = newRecord(keys[0]!, event.event, text, keys, context.source, context.receivedAt.getTime(), context.deliveryId);
    let added;
    try {
      added = await inbox.enqueue(record);
    } catch (error) {
      await this.#release(keys, owner);
      this.#errors.emit(new WebhookHandlerError(context.deliveryId, error, 'inbox'), context, 503);
      return 'store_unavailable';
    }
    if (added === 'full') {
      await this.#release(keys, owner);
      return 'full';
    }
    // Answered once the event is in the inbox, without waiting for the mark's own write
    // (a second group commit per request): the event is durable and runs from the inbox either way, and a
    // retry the mark missed finds it there ('exists').
    const marking: Promise<void> = this.store.complete(keys).then(
      () => void this.#marking.delete(marking),
      (error: unknown) => {
        this.#marking.delete(marking);
        this.#errors.emit(new WebhookHandlerError(context.deliveryId, error, 'store'), context, 500);
      },
    );
    this.#marking.add(marking);
    // This event is already in the inbox (its mark was lost in a crash): a duplicate delivery.
    return added === 'exists' ? 'processed' : 'queued';
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
    this.#errors.emit(error, context, error.status);
    const detail = error.message;
    return reply(error.code, detail, { status: error.status });
  }

  /**
   * Stops reconciliation and taking events, lets running inbox handlers finish (up to `inbox.closeTimeout`), keeps the
   * rest for the next start, and flushes the store.
   */
  async close(): Promise<void> {
    // Reconciliation first (its timer, and a run waiting on Retry-After): it feeds the inbox and the store.
    await this.#reconciler.close();
    await this.inbox?.close();
    await Promise.all([...this.#marking]);
    await this.store.close();
  }
}
