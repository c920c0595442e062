// The receiver's public options and the types its handlers see. No Node module: `cliphook/web` shares it.
import type { WebhookEvent } from '../protocol/events.js';
import type { DeliveryStore } from './delivery-store.js';
import type { ReconcileSchedule } from './reconcile-options.js';
import type { ReconcileCursor } from './reconcile.js';
import type { HeaderSource, VerifiedRequest } from './verify-core.js';
import type { InboxOptions, ResolvedInboxOptions } from './inbox/options.js';
import type { InboxBackend, InboxSource } from './inbox/record.js';

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
   * How long reading one request's body may take, in milliseconds, from the start of the read: past it the
   * request is answered `408 body_timeout` and its connection closed, so a sender that stalls mid-body
   * holds nothing open. A body that arrived with its headers never starts the timer.
   * @default 30_000
   */
  bodyTimeout?: number;
  /**
   * How long a claim holds before another request may take it over, in milliseconds: a process that
   * died mid-handler blocks its delivery no longer than this. Keep it above your slowest handler.
   * @default 60_000
   */
  leaseMs?: number;
  /**
   * Starts every event key (`<namespace>:e:<event>:<clip id>`) and keeps its own reconcile cursor, so
   * receivers of different accounts (different secrets) sharing one store do not take each other's
   * clips for duplicates. 1 to 64 of `A-Z a-z 0-9 . _ -`. Changing it forgets the dedupe history.
   * @default undefined: keys `e:<event>:<clip id>`, one cursor per store
   */
  namespace?: string;
  /** Milliseconds since the epoch. @default Date.now */
  clock?: () => number;
  /**
   * Reconcile on a timer: at start, then `every` milliseconds after each run, until `close()`.
   * @default off
   * @example reconcile: { apiKey: process.env.API_KEY!, baseUrl: 'https://api.example.com/v1', every: 15 * 60_000 }
   */
  reconcile?: ReconcileSchedule;
  /**
   * A durable inbox (docs/inbox.md): a verified, first-seen event is stored, answered 202 at once, and run
   * by the handlers from there with local retries. `true` keeps it beside the delivery store: in `inbox.json`
   * beside its file, or in memory beside a `MemoryDeliveryStore` (for tests: nothing written).
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
   * Where the event came from: `'webhook'`, `'reconcile'` (one `receiver.reconcile()` built from
   * GET /videos) or `'replay'` (`receiver.inbox.replay(id)`).
   */
  source: InboxSource;
  /**
   * Which run of the handlers this is, from 1; above 1 when the inbox retries it (or after a crash).
   * Without an inbox, 1.
   */
  attempt: number;
  /**
   * Aborted when the receiver stops waiting for this run, its reason a `HandlerTimeoutError`: with an inbox
   * at `inbox.handlerTimeout` (5 minutes by default; the run counts as failed and is retried) or when
   * `close()` passes `inbox.closeTimeout` (the event runs again at the next start); without one at `leaseMs`
   * (60 s by default), when the claim lapses and the sender's retry may run the event again (the run counts
   * as failed: 500, claim released). Pass it to `fetch` and database calls so abandoned work stops. It is a
   * getter, made on first read (an AbortController costs microseconds a run): a spread copy of the
   * context (`{ ...context }`) leaves it out.
   * @example receiver.on('video.completed', (event, { signal }) => fetch(event.video_url!, { signal }));
   */
  signal: AbortSignal;
}

/** How `ingest` ended for one event. */
export type IngestOutcome = 'handled' | 'duplicate' | 'failed';

/** Where an event given to `ingest` came from. */
export interface IngestOptions {
  source: 'reconcile';
}

export type WebhookHandler<E extends WebhookEvent = WebhookEvent> = (event: E, context: WebhookContext) => unknown;

/** What differs between runtimes: how a request is verified, and the default store. */
export interface ReceiverRuntime {
  /** Throws (or rejects with) a `WebhookVerificationError`; a promise only where the crypto is async. */
  verify(rawBody: Uint8Array, headers: HeaderSource, secrets: readonly string[], tolerance: number | false, now: number): VerifiedRequest | Promise<VerifiedRequest>;
  defaultStore(clock: () => number): DeliveryStore;
  /** The inbox's back end (file or Redis); absent where there is none (`cliphook/web`). */
  openInbox?(options: ResolvedInboxOptions, store: DeliveryStore, clock: () => number, namespace?: string): InboxBackend;
  /**
   * Where `reconcile()` remembers how far it got: beside the store on Node (file, Redis, memory), in memory
   * on the web; one per `namespace` of the store.
   */
  reconcileCursor(store: DeliveryStore, namespace: string | undefined): ReconcileCursor;
}
