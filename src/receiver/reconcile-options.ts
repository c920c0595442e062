// The options of `receiver.reconcile()` and of `createReceiver({ reconcile })`, checked
// once: a misconfiguration is a TypeError naming the option, at construction or at the call.
import { defaultTimers, type ReconcileTimers } from './reconcile-deadline.js';
import type { ListOptions } from './reconcile-list.js';
import { isLoopbackHost } from '../http/loopback.js';
import { parseUrl } from '../http/url.js';
import { MAX_TIMER_MS } from './host-timers.js';

export interface ReconcileOptions {
  /** The account's API key (spec 5), sent as `Authorization: Bearer …` to GET /videos. */
  apiKey: string;
  /**
   * The service's base URL, with `/v1`: https, or http on localhost or a loopback address only (the API key
   * and the list items, which carry no signature, are protected by TLS alone).
   * @example 'https://api.example.com/v1'
   */
  baseUrl: string;
  /**
   * Clips that ended (`completed_at`) at or after this time: a `Date`, an ISO 8601 string or milliseconds.
   * @default where the last run got to (the cursor), else 24 hours ago (the delivery store's default retention)
   */
  since?: Date | string | number;
  /** Makes the GET requests. @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** Waits out a 429 or 503's `Retry-After` (capped at 120 s a wait). @default a timer */
  sleep?: (ms: number) => Promise<void>;
  /** 429 and 503 answers waited out in one run before it gives up with `waits_exhausted`. @default 5 */
  maxWaits?: number;
  /** Pages of 100 clips read per status in one run before it gives up with `too_many_clips`. @default 100 */
  maxPages?: number;
  /**
   * The longest a clip can take from creation to its end. The list is ordered by creation, so each status
   * is paged until a clip created this long before `since`: the spec's 10-minute upstream time-out
   * (2.9 `upstream_timeout`) plus 20 minutes for queueing.
   * @default 1_800_000 (30 minutes)
   */
  maxGenerationMs?: number;
  /**
   * Milliseconds one GET may take, from sending it to the last byte of its answer; a service that sends
   * nothing, or drips its body, is cut off then and the run ends with `request_timeout`. A page of 100
   * clips is about 70 KB.
   * @default 30_000
   */
  requestTimeout?: number;
  /**
   * Milliseconds one run may take, Retry-After waits and handlers included; past it the run rejects with
   * `run_timeout` at once, hands no further event over, and moves no cursor, so the receiver's next run
   * (a call or the timer) is not held by it.
   * @default 900_000 (15 minutes)
   */
  runTimeout?: number;
  /** Where the deadlines (and a schedule's runs) are timed: a `SimulatedClock` fits. @default the global timers (unref'd on Node) */
  timers?: ReconcileTimers;
}

/** `createReceiver({ reconcile })`: a reconciliation at start and then every `every` milliseconds. */
export interface ReconcileSchedule extends Omit<ReconcileOptions, 'since'> {
  /** Milliseconds between the end of one run and the start of the next; at least 60_000 (spec 8: 60 requests a minute a key). */
  every: number;
  /** Told when a scheduled run throws (a `ReconcileError`). Handler failures go to `receiver.onError`. @default console.error */
  onError?: (error: Error) => void;
}

/**
 * A list item that makes no valid event of spec 2.12 (a field missing or of the wrong type): no handler
 * sees it, it does not hold the cursor, and `receiver.onError` hears of it once.
 */
export interface MalformedClip {
  /** The clip's id; `null` when the item has no valid one. */
  id: number | null;
  /** The first offending field, e.g. `credits_used`. */
  field: string;
  /** Why it makes no valid event. */
  message: string;
}

/** What one run did. `checked` = `handled` + `duplicates` + `failed` + `malformed.length`. */
export interface ReconcileResult {
  /** Distinct clips that ended at or after `since`. */
  checked: number;
  /** Events whose handlers ran now. */
  handled: number;
  /** Events already handled (by a webhook or an earlier run). */
  duplicates: number;
  /** Events a handler threw on, that were being handled elsewhere, or that the store did not take: the next run sees them again. */
  failed: number;
  /** Items of the list that make no valid event: skipped, so the next run from the cursor does not see them again. */
  malformed: MalformedClip[];
  /** ISO 8601: where this run started. */
  since: string;
  /** ISO 8601: where the next run without `since` starts. */
  cursor: string;
}

/** Where a run starts when no cursor is kept and no `since` is given. */
export const DEFAULT_SINCE_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_MAX_GENERATION_MS = 30 * 60 * 1000;
export const MIN_EVERY_MS = 60_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_RUN_TIMEOUT_MS = 15 * 60_000;

/** The options of one run, checked and with their defaults. */
export type ResolvedReconcileOptions = Omit<ListOptions, 'since' | 'signal'> & { since: number | undefined; runTimeout: number };

/** The options checked, with their defaults; `since` in milliseconds, or `undefined` for the cursor's. */
export function resolveReconcileOptions(options: unknown): ResolvedReconcileOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected reconcile options `{ apiKey, baseUrl }`.');
  const {
    apiKey,
    baseUrl,
    since,
    fetch = globalThis.fetch,
    sleep = defaultSleep,
    maxWaits = 5,
    maxPages = 100,
    maxGenerationMs = DEFAULT_MAX_GENERATION_MS,
    requestTimeout = DEFAULT_REQUEST_TIMEOUT_MS,
    runTimeout = DEFAULT_RUN_TIMEOUT_MS,
    timers = defaultTimers,
  } = options as ReconcileOptions;
  if (typeof apiKey !== 'string' || apiKey.length === 0 || /[\r\n]/.test(apiKey)) throw new TypeError('Expected `apiKey` to be the API key, a non-empty string on one line.');
  if (typeof fetch !== 'function') throw new TypeError('Expected `fetch` to be a function.');
  if (typeof sleep !== 'function') throw new TypeError('Expected `sleep` to be a function of milliseconds returning a promise.');
  if (!(Number.isSafeInteger(maxWaits) && maxWaits >= 0)) throw new TypeError(`Expected \`maxWaits\` to be a non-negative integer, got ${String(maxWaits)}.`);
  if (!(Number.isSafeInteger(maxPages) && maxPages >= 1)) throw new TypeError(`Expected \`maxPages\` to be a positive integer, got ${String(maxPages)}.`);
  if (!(Number.isFinite(maxGenerationMs) && maxGenerationMs >= 0)) throw new TypeError(`Expected \`maxGenerationMs\` to be a non-negative number of milliseconds, got ${String(maxGenerationMs)}.`);
  for (const [name, value] of [['requestTimeout', requestTimeout], ['runTimeout', runTimeout]] as const) {
    if (!(typeof value === 'number' && value > 0 && value <= MAX_TIMER_MS)) throw new TypeError(`Expected \`${name}\` to be a positive number of milliseconds, at most ${MAX_TIMER_MS}, got ${String(value)}.`);
  }
  if (typeof timers?.setTimeout !== 'function' || typeof timers.clearTimeout !== 'function') throw new TypeError('Expected `timers` to have setTimeout and clearTimeout.');
  return { apiKey, baseUrl: checkBaseUrl(baseUrl), since: since === undefined ? undefined : sinceMs(since), fetch, sleep, maxWaits, maxPages, maxGenerationMs, requestTimeout, runTimeout, timers };
}

/** A timer that does not keep a Node process alive: `close()` abandons a wait rather than ending it. */
function defaultSleep(ms: number): Promise<void> {
  return new Promise<void>((resolve) => (setTimeout(resolve, ms) as unknown as { unref?: () => void }).unref?.());
}

/** Checks `every` and the timers of a schedule; the rest is checked by `resolveReconcileOptions`. */
export function checkSchedule(schedule: unknown): ReconcileSchedule {
  if (typeof schedule !== 'object' || schedule === null) throw new TypeError('Expected `reconcile` to be `{ apiKey, baseUrl, every }`.');
  const { every, onError } = schedule as ReconcileSchedule;
  if (!(Number.isFinite(every) && every >= MIN_EVERY_MS && every <= MAX_TIMER_MS)) throw new TypeError(`Expected \`reconcile.every\` to be at least ${MIN_EVERY_MS} milliseconds (and at most ${MAX_TIMER_MS}), got ${String(every)}.`);
  if (onError !== undefined && typeof onError !== 'function') throw new TypeError('Expected `reconcile.onError` to be a function.');
  if ('since' in schedule) throw new TypeError('`reconcile.since` is not taken: a scheduled run starts where the last one got to.');
  resolveReconcileOptions(schedule);
  return schedule as ReconcileSchedule;
}

function checkBaseUrl(baseUrl: unknown): string {
  const url = parseUrl(String(baseUrl));
  if (!url) throw new TypeError(`Expected \`baseUrl\` to be the service's absolute URL with /v1, got ${JSON.stringify(baseUrl)}.`);
  if (typeof baseUrl !== 'string' || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '') {
    throw new TypeError(`Expected \`baseUrl\` to be an http(s) URL without query, such as https://api.example.com/v1, got ${JSON.stringify(baseUrl)}.`);
  }
  // The API key and the list items, which are unsigned, are trusted through TLS alone: plain http only
  // where nothing leaves the machine.
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new TypeError(`Expected \`baseUrl\` to use https (http only on localhost or a loopback address, as the API key and the unsigned clips travel over it), got ${JSON.stringify(baseUrl)}.`);
  }
  let href = url.href;
  while (href.endsWith('/')) href = href.slice(0, -1);
  return href;
}

/** `since` in milliseconds: a `Date`, an ISO 8601 string or milliseconds since the epoch. */
export function sinceMs(since: unknown): number {
  const ms = since instanceof Date ? since.getTime() : typeof since === 'number' ? since : typeof since === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(since) ? Date.parse(since) : NaN;
  if (!Number.isFinite(ms)) throw new TypeError(`Expected \`since\` to be a Date, an ISO 8601 time or milliseconds since the epoch, got ${JSON.stringify(since)}.`);
  return ms;
}
