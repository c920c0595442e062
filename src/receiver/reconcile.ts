// Issue 30 item 2: reconciliation after an outage. The clips that ended since a time are read through the
// service's API (reconcile-list.ts), each becomes the event its webhook carries (spec 2.12), and the
// receiver's own dedupe and handlers take it (`ingest`): what a webhook already delivered is a duplicate,
// and a webhook arriving later is one too (the event key is the event and the clip id). No Node module.
import { ReconcileError } from '../protocol/errors.js';
import { parseEvent, type WebhookEvent } from '../protocol/events.js';
import { listTerminalClips, type TerminalClip } from './reconcile-list.js';
import { checkSchedule, DEFAULT_SINCE_MS, resolveReconcileOptions, type ReconcileOptions, type ReconcileResult, type ReconcileSchedule } from './reconcile-options.js';

/**
 * Where a receiver remembers how far reconciliation got: the newest `completed_at` (milliseconds) up to
 * which every clip was handled. `advance` only ever moves it forward.
 */
export interface ReconcileCursor {
  read(): Promise<number | null>;
  advance(to: number): Promise<void>;
}

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
 * (a run waiting on Retry-After ends with `stopped`; one handing events over finishes first).
 */
export class Reconciler {
  readonly #target: IngestTarget;
  readonly #cursor: ReconcileCursor;
  readonly #clock: () => number;
  readonly #stop = new AbortController();
  /** The run in progress, so runs never overlap. */
  #running: Promise<unknown> = Promise.resolve();
  #timer: { handle: unknown; timers: NonNullable<ReconcileSchedule['timers']> } | null = null;

  constructor(target: IngestTarget, cursor: ReconcileCursor, clock: () => number) {
    this.#target = target;
    this.#cursor = cursor;
    this.#clock = clock;
  }

  /** One run: see `receiver.reconcile()`. */
  run(options: ReconcileOptions): Promise<ReconcileResult> {
    const resolved = resolveReconcileOptions(options);
    const run = this.#running.then(() => this.#run(resolved));
    this.#running = run.catch(() => undefined);
    return run;
  }

  async #run(options: ReturnType<typeof resolveReconcileOptions>): Promise<ReconcileResult> {
    if (this.#stop.signal.aborted) throw new ReconcileError('stopped', 'The receiver was closed.');
    const started = this.#clock();
    const since = options.since ?? (await this.#cursor.read()) ?? started - DEFAULT_SINCE_MS;
    const clips = await listTerminalClips({ ...options, since, signal: this.#stop.signal });
    const result = { checked: clips.length, handled: 0, duplicates: 0, failed: 0 };
    let firstFailed: TerminalClip | null = null;
    // Oldest completion first: the order the webhooks would have come in.
    for (const clip of clips) {
      let outcome: 'handled' | 'duplicate' | 'failed';
      try {
        outcome = await this.#target.ingest(eventOfClip(clip.item, this.#clock()), { source: 'reconcile' });
      } catch {
        // An item that makes no valid event: counted, and seen again by the next run.
        outcome = 'failed';
      }
      if (outcome === 'handled') result.handled++;
      else if (outcome === 'duplicate') result.duplicates++;
      else {
        result.failed++;
        firstFailed ??= clip;
      }
    }
    // Everything that ended before the listing began was listed; a failure holds the cursor at itself.
    let cursor = started - CLOCK_SKEW_MS;
    if (firstFailed !== null) cursor = Math.min(cursor, firstFailed.completedAt ?? since);
    cursor = Math.max(cursor, since);
    await this.#cursor.advance(cursor);
    return { ...result, since: new Date(since).toISOString(), cursor: new Date(cursor).toISOString() };
  }

  /** Runs at once and then `every` milliseconds after each run ends, until `close()`. */
  start(schedule: ReconcileSchedule): void {
    checkSchedule(schedule);
    const { every, timers = defaultTimers, onError = reportError, ...options } = schedule;
    const tick = (): void => {
      this.#timer = null;
      this.run(options)
        .catch((error: Error) => {
          if (!this.#stop.signal.aborted) onError(error);
        })
        .finally(() => {
          if (!this.#stop.signal.aborted) this.#timer = { handle: timers.setTimeout(tick, every), timers };
        });
    };
    this.#timer = { handle: timers.setTimeout(tick, 0), timers };
  }

  /** Stops the timer and any wait, and resolves once the run in progress has ended. */
  async close(): Promise<void> {
    this.#stop.abort();
    if (this.#timer) this.#timer.timers.clearTimeout(this.#timer.handle);
    this.#timer = null;
    await this.#running;
  }
}

const defaultTimers: NonNullable<ReconcileSchedule['timers']> = {
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms) as unknown as { unref?: () => void };
    // A scheduled reconciliation alone must not keep a Node process alive.
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};

function reportError(error: Error): void {
  console.error(`cliphook receiver: a scheduled reconciliation failed (${(error as { code?: string }).code ?? error.name}). Pass reconcile.onError to handle these yourself.`, error);
}
