// Reconciliation after an outage. The clips that ended since a time are read through the
// service's API (reconcile-list.ts), each becomes the event its webhook carries (spec 2.12), and the
// receiver's own dedupe and handlers take it (`ingest`): what a webhook already delivered is a duplicate,
// and a webhook arriving later is one too (the event key is the event and the clip id). No Node module.
import { InvalidPayloadError, ReconcileError, WebhookVerificationError } from '../protocol/errors.js';
import { parseEvent, type WebhookEvent } from '../protocol/events.js';
import { clipKey, listTerminalClips, type TerminalClip } from './reconcile-list.js';
import { abortError, deadline, defaultTimers, linked, orAbort, type ReconcileTimers } from './reconcile-deadline.js';
import { checkSchedule, DEFAULT_SINCE_MS, resolveReconcileOptions, type MalformedClip, type ReconcileOptions, type ReconcileResult, type ReconcileSchedule, type ResolvedReconcileOptions } from './reconcile-options.js';

/**
 * Where a receiver remembers how far reconciliation got: the newest `completed_at` (milliseconds) up to
 * which every clip was handled. `advance` only ever moves it forward.
 */
export interface ReconcileCursor {
  read(): Promise<number | null>;
  advance(to: number): Promise<void>;
}

/** Where a list item that makes no valid event is told: the receiver's `onError` listeners. */
export type MalformedReport = (error: WebhookVerificationError, context: { deliveryId?: string; source: 'reconcile' }) => void;

/** Malformed items remembered as told, so a run that sees one again does not tell it again. */
const MAX_TOLD = 10_000;

/** What reconciliation feeds: the receiver's `ingest`. */
export interface IngestTarget {
  ingest(event: WebhookEvent, options: { source: 'reconcile' }): Promise<'handled' | 'duplicate' | 'failed'>;
}

/**
 * How far behind the service's clock the receiver's may be. A clip listed while still running and ending
 * during the listing has a `completed_at` after the listing began; the cursor stays before that instant
 * (by the receiver's clock, less this margin), so such a clip is never skipped by the next run.
 */
export const CLOCK_SKEW_MS = 60_000;

/** A cursor in memory: the default for the memory store and any store of the user's (per store, so receivers sharing one share it). */
export class MemoryCursor implements ReconcileCursor {
  #at: number | null = null;
  async read(): Promise<number | null> {
    return this.#at;
  }
  async advance(to: number): Promise<void> {
    if (this.#at === null || to > this.#at) this.#at = to;
  }
}

/** Memory cursors by store, then by namespace (`''` for none): receivers sharing a store and a namespace share a cursor. */
const memoryCursors = new WeakMap<object, Map<string, ReconcileCursor>>();

/** The memory cursor of `store` in `namespace`, made on first use. */
export function memoryCursorFor(store: object, namespace?: string): ReconcileCursor {
  let cursors = memoryCursors.get(store);
  if (!cursors) memoryCursors.set(store, (cursors = new Map()));
  let cursor = cursors.get(namespace ?? '');
  if (!cursor) cursors.set(namespace ?? '', (cursor = new MemoryCursor()));
  return cursor;
}

/**
 * The event a clip's webhook carries (spec 2.12), built from the list item (spec 2.1): `video.completed`
 * for done, `video.failed` for error, every field from the clip, `delivered_at` = now. Its `video_url` is
 * the API's signed link (valid 7 days), not the webhook's page link (spec 6.5). Throws
 * `InvalidPayloadError` for an item that does not make a valid event.
 */
export function eventOfClip(item: Record<string, unknown>, deliveredAt: number): WebhookEvent {
  const done = item.status === 'done';
  return parseEvent({
    event: done ? 'video.completed' : 'video.failed',
    id: item.id,
    status: item.status,
    prompt: item.prompt ?? null,
    video_url: done ? item.video_url : null,
    error: done ? null : (item.error ?? null),
    error_code: done ? null : item.error_code,
    credits_used: item.credits_used,
    duration: item.duration ?? null,
    model: item.model ?? null,
    created_at: item.created_at ?? null,
    completed_at: item.completed_at ?? null,
    delivered_at: new Date(deliveredAt).toISOString(),
  });
}

/**
 * Runs reconciliations for one receiver, one at a time, and the optional timer; `close()` stops both
 * (a run listing or waiting on Retry-After ends with `stopped`; one handing events over finishes first,
 * within its `runTimeout`).
 */
export class Reconciler {
  readonly #target: IngestTarget;
  readonly #cursor: ReconcileCursor;
  readonly #clock: () => number;
  readonly #stop = new AbortController();
  /** The run in progress and its options: a call with the same options joins it, any other is refused. */
  #current: { options: ResolvedReconcileOptions; promise: Promise<ReconcileResult> } | null = null;
  #timer: { handle: unknown; timers: ReconcileTimers } | null = null;
  readonly #report: MalformedReport;
  readonly #told = new Set<string>();

  constructor(target: IngestTarget, cursor: ReconcileCursor, clock: () => number, report: MalformedReport = () => undefined) {
    this.#target = target;
    this.#cursor = cursor;
    this.#clock = clock;
    this.#report = report;
  }

  /** One run: see `receiver.reconcile()`. */
  run(options: ReconcileOptions): Promise<ReconcileResult> {
    const resolved = resolveReconcileOptions(options);
    const current = this.#current;
    if (current !== null) {
      if (sameOptions(current.options, resolved)) return current.promise;
      return Promise.reject(new ReconcileError('reconcile_in_progress', 'A reconciliation with other options is running on this receiver: call again once it has ended (a call with the same options joins it).'));
    }
    const timeout = deadline(resolved.timers, resolved.runTimeout, () => new ReconcileError('run_timeout', `The reconciliation took longer than ${resolved.runTimeout} ms (runTimeout); the cursor did not move.`));
    // The deadline settles the run even when a handler never does: the next run is not held by it.
    const promise = orAbort(this.#run(resolved, timeout.signal), timeout.signal).finally(() => {
      timeout.clear();
      if (this.#current?.promise === promise) this.#current = null;
    });
    this.#current = { options: resolved, promise };
    return promise;
  }

  async #run(options: ResolvedReconcileOptions, timeout: AbortSignal): Promise<ReconcileResult> {
    if (this.#stop.signal.aborted) throw new ReconcileError('stopped', 'The receiver was closed.');
    const started = this.#clock();
    const since = options.since ?? (await this.#cursor.read()) ?? started - DEFAULT_SINCE_MS;
    const listing = linked([this.#stop.signal, timeout]);
    let clips: TerminalClip[];
    try {
      clips = await listTerminalClips({ ...options, since, signal: listing.signal });
    } finally {
      listing.clear();
    }
    const result = { checked: clips.length, handled: 0, duplicates: 0, failed: 0, malformed: [] as MalformedClip[] };
    let firstFailed: TerminalClip | null = null;
    // Oldest completion first: the order the webhooks would have come in.
    for (const clip of clips) {
      // Past the deadline the run has already rejected: nothing more is handed over.
      if (timeout.aborted) throw abortError(timeout);
      let event: WebhookEvent;
      try {
        event = eventOfClip(clip.item, this.#clock());
      } catch (error) {
        // The same item every run: holding the cursor for it would hold it for good.
        result.malformed.push(this.#malformed(clip, error));
        continue;
      }
      let outcome: 'handled' | 'duplicate' | 'failed';
      try {
        outcome = await this.#target.ingest(event, { source: 'reconcile' });
      } catch {
        outcome = 'failed';
      }
      if (outcome === 'handled') result.handled++;
      else if (outcome === 'duplicate') result.duplicates++;
      else {
        result.failed++;
        firstFailed ??= clip;
      }
    }
    if (timeout.aborted) throw abortError(timeout);
    // Everything that ended before the listing began was listed; a failure holds the cursor at itself.
    let cursor = started - CLOCK_SKEW_MS;
    if (firstFailed !== null) cursor = Math.min(cursor, firstFailed.completedAt ?? since);
    cursor = Math.max(cursor, since);
    await this.#cursor.advance(cursor);
    return { ...result, since: new Date(since).toISOString(), cursor: new Date(cursor).toISOString() };
  }

  /** The item as reported in the result; told to `onError` the first time this receiver sees it. */
  #malformed(clip: TerminalClip, error: unknown): MalformedClip {
    const field = error instanceof InvalidPayloadError ? error.field : '';
    const reason = error instanceof Error ? error.message : String(error);
    const malformed = { id: clip.id, field, message: `The service listed ${clip.id === null ? 'a clip without a valid id' : `clip ${clip.id}`}, which makes no valid event: ${reason} Reconciliation skips it.` };
    const key = clipKey(clip);
    if (!this.#told.has(key)) {
      this.#told.add(key);
      if (this.#told.size > MAX_TOLD) this.#told.delete(this.#told.values().next().value!);
      const name = clip.status === 'done' ? 'video.completed' : 'video.failed';
      // 502: the service, not a sender anyone could be, answered something invalid (logged with no listener).
      const told = new WebhookVerificationError('invalid_payload', 502, malformed.message);
      this.#report(told, clip.id === null ? { source: 'reconcile' } : { deliveryId: `reconcile:${name}:${clip.id}`, source: 'reconcile' });
    }
    return malformed;
  }

  /**
   * Runs at once and then `every` milliseconds after each run ends, until `close()`. A tick that finds a
   * run in progress (a call's) takes that run as its own rather than queueing one behind it.
   */
  start(schedule: ReconcileSchedule): void {
    checkSchedule(schedule);
    const { every, onError = reportError, ...options } = schedule;
    const timers = options.timers ?? defaultTimers;
    const tick = (): void => {
      this.#timer = null;
      const other = this.#current?.promise;
      const run = other ?? this.run(options);
      run
        .catch((error: Error) => {
          // A call's run tells its caller; the schedule hears only its own.
          if (other === undefined && !this.#stop.signal.aborted) onError(error);
        })
        .finally(() => {
          if (!this.#stop.signal.aborted) this.#timer = { handle: timers.setTimeout(tick, every), timers };
        });
    };
    this.#timer = { handle: timers.setTimeout(tick, 0), timers };
  }

  /** Stops the timer and any listing or wait, and resolves once the run in progress has ended. */
  async close(): Promise<void> {
    this.#stop.abort(new ReconcileError('stopped', 'The receiver was closed during reconciliation.'));
    if (this.#timer) this.#timer.timers.clearTimeout(this.#timer.handle);
    this.#timer = null;
    await this.#current?.promise.catch(() => undefined);
  }
}

/** Whether two runs would do the same: every option the same value (functions the same function). */
function sameOptions(a: ResolvedReconcileOptions, b: ResolvedReconcileOptions): boolean {
  return (Object.keys(a) as Array<keyof ResolvedReconcileOptions>).every((key) => Object.is(a[key], b[key]));
}

function reportError(error: Error): void {
  console.error(`cliphook receiver: a scheduled reconciliation failed (${(error as { code?: string }).code ?? error.name}). Pass reconcile.onError to handle these yourself.`, error);
}
