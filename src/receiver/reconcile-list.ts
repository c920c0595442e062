// The clips that reached a terminal state since a time, read through the service's own
// API (spec 4.3: GET /videos, newest first by creation, `status` filter, `limit` 1-100 and `offset`).
// No Node module: the web receiver reconciles too.
import { ReconcileError } from '../protocol/errors.js';
import { abortError, deadline, orAbort, type ReconcileTimers } from './reconcile-deadline.js';

/** A clip of the list that reached done or error, as GET /videos shows it (spec 2.1). */
export interface TerminalClip {
  /** `null` for an item whose `id` is not a positive integer: listed so that it is reported, not dropped. */
  id: number | null;
  status: 'done' | 'error';
  /** `completed_at` in milliseconds; `null` when the service gave none (such a clip is always taken). */
  completedAt: number | null;
  /** The list item itself, every field of spec 2.1. */
  item: Record<string, unknown>;
}

export interface ListOptions {
  apiKey: string;
  /** The service's base URL, with `/v1` and without a trailing slash. */
  baseUrl: string;
  /** Milliseconds: clips whose `completed_at` is at or after it. */
  since: number;
  fetch: typeof globalThis.fetch;
  sleep: (ms: number) => Promise<void>;
  maxWaits: number;
  maxPages: number;
  maxGenerationMs: number;
  /** Milliseconds one GET may take, headers and body. */
  requestTimeout: number;
  /** Where the request deadlines are timed. */
  timers: ReconcileTimers;
  /** Aborted when the receiver closes or the run's deadline passes: a wait ends at once and the listing stops with its reason. */
  signal?: AbortSignal | undefined;
}

/** The page size: spec 4.3's largest. */
export const PAGE_LIMIT = 100;
/**
 * Items each page repeats of the one before. Offset paging newest first is pushed down by new clips (an
 * item is seen twice, deduped by id), but pulled up by a DELETE of a listed clip, which would skip one
 * item per deletion between two reads: up to this many are caught.
 */
export const PAGE_OVERLAP = 10;
/** A Retry-After longer than this is waited this long, then asked again (and counts as another wait). */
export const MAX_WAIT_MS = 120_000;
/** The largest list answer read: 100 items of spec 2.1 are about 70 KB. */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * Every clip of the account that ended (done, error) at or after `since`, oldest `completed_at` first,
 * each once. The list is ordered by creation, and a clip may end long after it was created, so each
 * status is paged until a clip was created more than `maxGenerationMs` before `since` (the spec's
 * 10-minute upstream time-out plus queueing margin): none created earlier can have ended after `since`.
 * Throws `ReconcileError` when it could not see them all.
 */
export async function listTerminalClips(options: ListOptions): Promise<TerminalClip[]> {
  const seen = new Map<string, TerminalClip>();
  const waits = { left: options.maxWaits };
  for (const status of ['done', 'error'] as const) await listStatus(status, options, seen, waits);
  return [...seen.values()].sort((a, b) => (a.completedAt ?? Infinity) - (b.completedAt ?? Infinity) || (a.id ?? 0) - (b.id ?? 0));
}

async function listStatus(status: 'done' | 'error', options: ListOptions, seen: Map<string, TerminalClip>, waits: { left: number }): Promise<void> {
  const floor = options.since - options.maxGenerationMs;
  let offset = 0;
  for (let page = 0; ; page++) {
    if (page >= options.maxPages) {
      throw new ReconcileError('too_many_clips', `More than ${options.maxPages} pages of ${status} clips since ${new Date(options.since).toISOString()}: reconcile from a later \`since\`, or raise \`maxPages\`.`);
    }
    const list = await getPage(`${options.baseUrl}/videos?status=${status}&limit=${PAGE_LIMIT}&offset=${offset}`, options, waits);
    let older = false;
    for (const item of list.data) {
      const clip = terminalClip(item, status);
      if (clip === null) continue;
      const created = typeof item.created_at === 'string' ? Date.parse(item.created_at) : NaN;
      if (created < floor) older = true;
      if (clip.completedAt === null || clip.completedAt >= options.since) seen.set(clipKey(clip), clip);
    }
    if (older || list.data.length < PAGE_LIMIT || offset + list.data.length >= list.total) return;
    offset += PAGE_LIMIT - PAGE_OVERLAP;
  }
}

/** The item as a terminal clip of `status`; `null` for an item the filter should not have given. */
function terminalClip(item: Record<string, unknown>, status: 'done' | 'error'): TerminalClip | null {
  if (item.status !== status) return null;
  const id = Number.isSafeInteger(item.id) && (item.id as number) >= 1 ? (item.id as number) : null;
  const completed = typeof item.completed_at === 'string' ? Date.parse(item.completed_at) : NaN;
  return { id, status, completedAt: Number.isNaN(completed) ? null : completed, item };
}

/**
 * A clip's identity within a run: its id, so the overlap of two pages counts it once. An item without a
 * valid id is told apart by what it shows instead; its signed `video_url` changes on every read.
 */
export function clipKey(clip: TerminalClip): string {
  return clip.id !== null ? String(clip.id) : `?${clip.status}:${JSON.stringify([clip.item.id, clip.item.created_at, clip.item.completed_at])}`;
}

interface VideoList {
  data: Record<string, unknown>[];
  total: number;
}

/** One GET, waiting out 429 and 503 (spec 7: Retry-After) while waits are left. */
async function getPage(url: string, options: ListOptions, waits: { left: number }): Promise<VideoList> {
  for (;;) {
    if (options.signal?.aborted) throw abortError(options.signal);
    const { res, body } = await getJson(url, options);
    if (res.ok) return asVideoList(body, url);
    const problem = (typeof body === 'object' && body !== null ? body : {}) as { code?: unknown; retry_after?: unknown; detail?: unknown };
    const serviceCode = typeof problem.code === 'string' ? problem.code : undefined;
    if (res.status !== 429 && res.status !== 503) {
      const detail = typeof problem.detail === 'string' ? `: ${problem.detail.slice(0, 200)}` : '';
      // Spec 4.3: the list is at /v1/videos, so a 404 there is most often a base URL without /v1.
      const hint = res.status === 404 ? ` (\`baseUrl\` must be the service's base URL ending in /v1, such as https://api.example.com/v1)` : '';
      throw new ReconcileError('service_error', `GET ${url} answered ${res.status}${serviceCode ? ` ${serviceCode}` : ''}${detail}${hint}`, { status: res.status, serviceCode });
    }
    if (waits.left <= 0) {
      throw new ReconcileError('waits_exhausted', `GET ${url} answered ${res.status}${serviceCode ? ` ${serviceCode}` : ''} after ${options.maxWaits} waits; reconcile again later.`, { status: res.status, serviceCode });
    }
    waits.left--;
    await orAbort(options.sleep(retryAfterMs(res.headers.get('retry-after'), problem.retry_after)), options.signal);
  }
}

/**
 * One GET and its body, within `requestTimeout` from the request to the body's last byte: a service
 * that answers nothing, or drips its body a byte at a time, would otherwise hold the run for as long.
 */
async function getJson(url: string, options: ListOptions): Promise<{ res: Response; body: unknown }> {
  const request = deadline(options.timers, options.requestTimeout, () => new ReconcileError('request_timeout', `GET ${url} sent no whole answer within ${options.requestTimeout} ms (requestTimeout).`), [options.signal]);
  try {
    let res: Response;
    try {
      res = await orAbort(options.fetch(url, { headers: { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' }, signal: request.signal }), request.signal);
    } catch (error) {
      if (request.signal.aborted) throw abortError(request.signal);
      throw new ReconcileError('unreachable', `Could not reach ${new URL(url).host} (GET ${url}): ${whyUnreachable(error)}`, { cause: error });
    }
    return { res, body: await readJson(res, url, request.signal) };
  } finally {
    request.clear();
  }
}

/** Spec 7: whole seconds in `Retry-After` (or the body's `retry_after`); 1 s when neither says. */
export function retryAfterMs(header: string | null, member: unknown): number {
  const fromHeader = header !== null && /^\d{1,6}$/.test(header.trim()) ? Number(header.trim()) : NaN;
  const seconds = Number.isFinite(fromHeader) ? fromHeader : typeof member === 'number' && Number.isFinite(member) && member >= 0 ? member : 1;
  return Math.min(Math.max(seconds, 0) * 1000, MAX_WAIT_MS);
}

/**
 * Why a fetch failed, down its causes: fetch says only "fetch failed", its cause says `connect
 * ECONNREFUSED 10.0.0.1:443` or `getaddrinfo ENOTFOUND api.example.com`.
 */
export function whyUnreachable(error: unknown): string {
  const parts: string[] = [];
  let at: unknown = error;
  for (let depth = 0; at !== null && at !== undefined && depth < 5; depth++) {
    const code = (at as { code?: unknown }).code;
    // Happy eyeballs tries every address and fails with all of their errors.
    const inner = at instanceof AggregateError ? at.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join(', ') : '';
    const message = [at instanceof Error ? at.message : String(at), inner].filter(Boolean).join(' ');
    parts.push(typeof code === 'string' && !message.includes(code) ? `${code} ${message}`.trim() : message);
    at = (at as { cause?: unknown }).cause;
  }
  return parts.filter(Boolean).join(': ');
}

/** The body as JSON, read at most `MAX_PAGE_BYTES` until `signal` aborts; `null` for a body that is not JSON. */
async function readJson(res: Response, url: string, signal: AbortSignal): Promise<unknown> {
  const declared = Number(res.headers.get('content-length'));
  if (declared > MAX_PAGE_BYTES) {
    await res.body?.cancel();
    throw new ReconcileError('invalid_response', `GET ${url} answered ${declared} bytes; at most ${MAX_PAGE_BYTES} are read.`, { status: res.status });
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = res.body?.getReader();
  if (reader) {
    const next = () =>
      orAbort(reader.read(), signal).catch((error: unknown) => {
        // A fetch that ignores its signal would keep the socket: cancel the body, without waiting on it.
        reader.cancel().catch(() => undefined);
        if (signal.aborted) throw abortError(signal);
        throw new ReconcileError('unreachable', `GET ${url} broke off its answer: ${(error as Error)?.message ?? String(error)}`, { cause: error });
      });
    for (let read = await next(); !read.done; read = await next()) {
      bytes += read.value.byteLength;
      if (bytes > MAX_PAGE_BYTES) {
        await reader.cancel();
        throw new ReconcileError('invalid_response', `GET ${url} answered more than ${MAX_PAGE_BYTES} bytes.`, { status: res.status });
      }
      chunks.push(read.value);
    }
  }
  const all = new Uint8Array(bytes);
  let at = 0;
  for (const chunk of chunks) all.set(chunk, (at += chunk.byteLength) - chunk.byteLength);
  try {
    return JSON.parse(new TextDecoder().decode(all));
  } catch {
    return null;
  }
}

function asVideoList(body: unknown, url: string): VideoList {
  const list = body as { data?: unknown; total?: unknown } | null;
  if (typeof list !== 'object' || list === null || !Array.isArray(list.data) || !list.data.every((item) => typeof item === 'object' && item !== null)) {
    throw new ReconcileError('invalid_response', `GET ${url} did not answer a VideoList (spec 2.1: { data, total, limit, offset }).`, { status: 200 });
  }
  const total = Number.isSafeInteger(list.total) ? (list.total as number) : Infinity;
  return { data: list.data as Record<string, unknown>[], total };
}
