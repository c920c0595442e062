/**
 * Every error cliphook throws to library users is one of these classes, each with a stable `code`.
 * They live together so a reader sees the whole set.
 */
export class CliphookError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Codes a webhook request can be refused with; each maps to an HTTP status in `protocol/problem.ts`. */
export type WebhookVerificationCode =
  | 'missing_signature'
  | 'malformed_signature'
  | 'invalid_signature'
  | 'missing_delivery_id'
  | 'invalid_json'
  | 'invalid_payload'
  | 'stale_delivery'
  | 'body_too_large'
  | 'body_timeout'
  | 'body_already_parsed';

/** A webhook request that must not be processed: bad signature, malformed body, replay, too large. */
export class WebhookVerificationError extends CliphookError {
  declare readonly code: WebhookVerificationCode;
  /** The HTTP status the receiver answers with. */
  readonly status: number;
  constructor(code: WebhookVerificationCode, status: number, message: string) {
    super(code, message);
    this.status = status;
  }
}

/** A payload that does not have the shape of spec 2.12. */
export class InvalidPayloadError extends CliphookError {
  /** Dotted path of the first offending field, e.g. `credits_used`. */
  readonly field: string;
  constructor(field: string, message: string) {
    super('invalid_payload', message);
    this.field = field;
  }
}

/** What failed while a receiver processed a delivery: a handler, the delivery store, or the inbox. */
export type WebhookFailureStage = 'handler' | 'store' | 'inbox';

/** The limit a handler ran past: the inbox's `handlerTimeout`, its `closeTimeout` while closing, or (without an inbox) `leaseMs`. */
export type HandlerTimeoutLimit = 'handlerTimeout' | 'closeTimeout' | 'leaseMs';

/**
 * A handler still running at its deadline: the reason of the handler's `context.signal`, aborted then, and
 * the `cause` of the `WebhookHandlerError` (code `handler_timeout`) that `receiver.onError` hears. Past
 * `handlerTimeout` (inbox) or `leaseMs` (no inbox) the run counts as failed and is retried; past
 * `closeTimeout` the receiver closed and the event runs again at the next start. The handler's promise is
 * abandoned, not stopped: stop its work on `signal`.
 * @example signal.addEventListener('abort', () => console.log(signal.reason.limit)); // 'handlerTimeout'
 */
export class HandlerTimeoutError extends CliphookError {
  declare readonly code: 'handler_timeout';
  readonly limit: HandlerTimeoutLimit;
  /** The limit, in milliseconds. */
  readonly ms: number;
  constructor(limit: HandlerTimeoutLimit, ms: number) {
    const why =
      limit === 'closeTimeout'
        ? `the receiver closed and \`inbox.closeTimeout\` (${ms} ms) passed: the event runs again at the next start`
        : limit === 'handlerTimeout'
          ? `it ran past \`inbox.handlerTimeout\` (${ms} ms): the run counts as failed and its slot is freed`
          : `it ran past \`leaseMs\` (${ms} ms), when its claim lapses: the run counts as failed`;
    super('handler_timeout', `The handler was abandoned: ${why}.`);
    this.limit = limit;
    this.ms = ms;
  }
}

/**
 * A delivery a receiver could not process: a handler threw (`handler_failed`; the claim was released so the
 * sender's retry runs it again) or ran past its deadline (`handler_timeout`, `cause` a `HandlerTimeoutError`),
 * or the delivery store or the inbox did not answer (`store_unavailable`; no handler ran). `stage` says which.
 */
export class WebhookHandlerError extends CliphookError {
  declare readonly code: 'handler_failed' | 'handler_timeout' | 'store_unavailable';
  readonly deliveryId: string;
  readonly stage: WebhookFailureStage;
  constructor(deliveryId: string, cause: unknown, stage: WebhookFailureStage = 'handler') {
    // Named by the stage that failed: a store or inbox that failed is not "A handler failed", since none ran.
    const timedOut = stage === 'handler' && cause instanceof HandlerTimeoutError;
    const what = timedOut ? 'A handler timed out' : stage === 'handler' ? 'A handler failed' : stage === 'store' ? 'The delivery store failed' : 'The inbox failed';
    super(timedOut ? 'handler_timeout' : stage === 'handler' ? 'handler_failed' : 'store_unavailable', `${what} for delivery ${deliveryId}: ${describeFailure(cause)}`, { cause });
    this.deliveryId = deliveryId;
    this.stage = stage;
  }
}

/** A callback URL the emitter refuses to call (scheme, length, credentials, or a private address). */
export class InvalidCallbackUrlError extends CliphookError {
  constructor(message: string) {
    super('invalid_callback_url', message);
  }
}

/**
 * `redeliver()` of a delivery id the emitter does not hold (never sent, or past retention).
 * @example
 * try { await emitter.redeliver(id); } catch (error) { if (error instanceof DeliveryNotFoundError) res.status(404); }
 */
export class DeliveryNotFoundError extends CliphookError {
  readonly deliveryId: string;
  constructor(deliveryId: string) {
    super('delivery_not_found', `No delivery ${JSON.stringify(deliveryId)} in this emitter's outbox.`);
    this.deliveryId = deliveryId;
  }
}

/** Why `receiver.inbox.replay(id)` (or `get` through the CLI) refused: no such record, or one still pending or running. */
export type InboxErrorCode = 'inbox_record_not_found' | 'inbox_not_replayable';

/**
 * An inbox operation on a record that does not allow it.
 * @example try { await receiver.inbox.replay(id); } catch (error) { if (error instanceof InboxError && error.code === 'inbox_record_not_found') … }
 */
export class InboxError extends CliphookError {
  declare readonly code: InboxErrorCode;
  readonly id: string;
  constructor(code: InboxErrorCode, id: string, message: string) {
    super(code, message);
    this.id = id;
  }
}

/** Why the emitter cannot take a call: not started, stopped, or (on Redis) its Redis cannot be reached at `start()`. */
export type EmitterStateCode = 'emitter_not_started' | 'emitter_stopped' | 'redis_unreachable';

/**
 * A call the emitter cannot take in its current state: `send()` before `start()` or after `stop()`, or a
 * `start()` whose Redis (the BullMQ backend) cannot be reached; `cause` then holds the connection error.
 * @example error.code // 'emitter_not_started' | 'emitter_stopped' | 'redis_unreachable'
 */
export class EmitterStateError extends CliphookError {
  declare readonly code: EmitterStateCode;
  constructor(code: EmitterStateCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** Who holds a data file's lock: from its `<file>.lock`. */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** ISO 8601: when the holder took the lock. */
  since: string;
  /** ISO 8601: the lock file's last heartbeat (its holder touches it every 10 s). */
  touchedAt: string;
}

/**
 * Another live process holds the data file (its `<file>.lock`): two processes on one file would
 * overwrite each other's writes. Give each process its own file, or use Redis for several processes.
 * @example error.code // 'file_locked'; error.holder // { pid: 4242, hostname: 'web-1', since: '…', touchedAt: '…' }
 */
export class FileLockedError extends CliphookError {
  /** The data file, as an absolute path. */
  readonly file: string;
  /** The holder, as its lock file says; `null` when the lock file could not be read. */
  readonly holder: LockHolder | null;
  /** `now`: milliseconds since the epoch, to say how long ago the holder last touched its lock. */
  constructor(file: string, what: string, holder: LockHolder | null, now: number) {
    const touched = holder ? Math.max(0, Math.round((now - Date.parse(holder.touchedAt)) / 1000)) : 0;
    const who = holder
      ? `process ${holder.pid} on ${holder.hostname} (locked since ${holder.since}, last touched ${touched} s ago)`
      : 'another process';
    super(
      'file_locked',
      `${file} is in use by ${who}: one ${what} per file, as two processes on one file overwrite each other's writes. ` +
        'Give each process its own file, or stop the other one. ' +
        `A lock left by a process that is gone is taken over by the next start: at once on the same machine, and ` +
        `once untouched for 30 s from another one (such as a new container); ${file}.lock says who holds it.`,
    );
    this.file = file;
    this.holder = holder;
  }
}

/**
 * A failure's text, always a string, whatever was thrown: an Error whose `message` is not a string, an
 * object with no `toString`. Messages and stored records are made from it, so an odd throw cannot break them.
 * @example describeFailure(new Error('boom')) // 'boom'
 */
export function describeFailure(value: unknown): string {
  try {
    const message = value instanceof Error ? value.message : value;
    return typeof message === 'string' ? message : String(message);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * Why the relay refused a listener or a channel request. All but `relay_unreachable` (no HTTP answer at all)
 * are answers that reconnecting cannot change, so `listen` stops on them.
 */
export type RelayErrorCode = 'invalid_token' | 'channel_not_found' | 'admin_token_required' | 'relay_refused' | 'relay_unreachable';

/**
 * The relay refused a listener or a channel request: a bad token, an unknown or deleted channel.
 * @example
 * try { await connectListener(options); } catch (error) { if (error instanceof RelayError && error.code === 'invalid_token') … }
 */
export class RelayError extends CliphookError {
  declare readonly code: RelayErrorCode;
  /** The HTTP status of the refusal, when it came over HTTP. */
  readonly status: number | undefined;
  constructor(code: RelayErrorCode, message: string, status?: number) {
    super(code, message);
    this.status = status;
  }
}

/** Why a reconciliation stopped: see `ReconcileError`. */
export type ReconcileErrorCode =
  | 'service_error'
  | 'waits_exhausted'
  | 'unreachable'
  | 'invalid_response'
  | 'too_many_clips'
  | 'request_timeout'
  | 'run_timeout'
  | 'reconcile_in_progress'
  | 'stopped';

/**
 * Why a reconciliation stopped before it had seen every clip: `service_error` (the service answered a
 * problem that waiting does not fix: 401 invalid_api_key, 402, 404, a 5xx other than 503),
 * `waits_exhausted` (429 or 503 more often than `maxWaits`), `unreachable` (no HTTP answer, or one broken
 * off), `invalid_response` (an answer that is not a VideoList, or larger than the bound), `too_many_clips`
 * (more than `maxPages` pages since `since`), `request_timeout` (a GET, headers and body, took longer than
 * `requestTimeout`), `run_timeout` (the run took longer than `runTimeout`; the events it had handed over
 * stay handled), `reconcile_in_progress` (a run with other options was in progress on the receiver; none
 * was started), `stopped` (the receiver was closed). The cursor of a run that throws did not move, and
 * only a `run_timeout` can come after events were handled.
 * @example try { await receiver.reconcile(options); } catch (error) { if (error instanceof ReconcileError) console.log(error.code, error.status, error.serviceCode); }
 */
export class ReconcileError extends CliphookError {
  declare readonly code: ReconcileErrorCode;
  /** The HTTP status of the service's last answer, when there was one. */
  readonly status: number | undefined;
  /** The problem body's `code` (spec 7), e.g. `invalid_api_key`, when there was one. */
  readonly serviceCode: string | undefined;
  constructor(code: ReconcileErrorCode, message: string, { status, serviceCode, cause }: { status?: number; serviceCode?: string; cause?: unknown } = {}) {
    super(code, message, { cause });
    this.status = status;
    this.serviceCode = serviceCode;
  }
}
