import { VIDEO_ERROR_CODES, type VideoErrorCode } from '../../protocol/events.js';
import type { ProblemCode } from '../../protocol/problem.js';

/** How long the simulated work takes: a few seconds, or the spec's own times (clips 1-2 minutes, moderation 5-60 s). */
export type Speed = 'fast' | 'realistic';

/**
 * `simulate:<code>` markers in a prompt: how a user's tests make the service fail on purpose, every way
 * the spec says it can, as Stripe's magic test card numbers do.
 *
 * - `simulate:<error_code>` (any value of spec 2.9): the clip is accepted and charged, then ends `error`
 *   with that error_code, refunded, with a `video.failed` webhook. A retry of a retryable one succeeds;
 *   `simulate:<error_code>:sticky` makes its retry fail the same way.
 * - `simulate:<request code>`: the request itself is answered with that problem and nothing is charged
 *   (`task_create_failed` and `internal_error` say credits were refunded, as the spec's 500s do).
 *   `upstream_busy` and `image_fetch_failed` are also 2.9 error_codes, which a bare marker means: the 503
 *   and the 422 are `simulate:request:upstream_busy` and `simulate:request:image_fetch_failed`.
 */
export const REQUEST_CODES = [
  'upstream_busy',
  'no_session_available',
  'generation_paused',
  'moderation_pending',
  'task_create_failed',
  'internal_error',
  'region_unavailable',
  'image_fetch_failed',
  'photo_rejected',
] as const satisfies readonly ProblemCode[];
export type RequestCode = (typeof REQUEST_CODES)[number];

export type Simulation =
  | { kind: 'task'; code: VideoErrorCode; sticky: boolean }
  | { kind: 'request'; code: RequestCode };

/** The word every marker starts with: a prompt without it has none, and is not parsed (a plain one costs a search). */
export const SIMULATE_WORD = 'simulate:';

const MARKER = /(?:^|[^\w:])simulate:((?:request:)?[a-z_]+)(:sticky)?(?![\w:])/g;

/**
 * The first `simulate:` marker in `prompt` that names a known code, or `null`. A marker that names no
 * known code is not a marker (a prompt may say "simulate:anything", or carry a webhook chaos marker such
 * as `simulate:webhook_duplicate` beside it), so it is skipped rather than refused.
 * @example parseSimulation('a fox simulate:upstream_timeout:sticky') // { kind: 'task', code: 'upstream_timeout', sticky: true }
 * @example parseSimulation('simulate:webhook_late simulate:upstream_busy') // { kind: 'task', code: 'upstream_busy', sticky: false }
 */
export function parseSimulation(prompt: string | null | undefined): Simulation | null {
  if (!prompt) return null;
  for (const [, name, sticky] of prompt.matchAll(MARKER)) {
    const simulation = simulationOf(name!, Boolean(sticky));
    if (simulation) return simulation;
  }
  return null;
}

function simulationOf(name: string, sticky: boolean): Simulation | null {
  if (name.startsWith('request:')) {
    const code = name.slice('request:'.length);
    return isRequestCode(code) && !sticky ? { kind: 'request', code } : null;
  }
  if ((VIDEO_ERROR_CODES as readonly string[]).includes(name)) return { kind: 'task', code: name as VideoErrorCode, sticky };
  return isRequestCode(name) && !sticky ? { kind: 'request', code: name } : null;
}

function isRequestCode(value: string): value is RequestCode {
  return (REQUEST_CODES as readonly string[]).includes(value);
}
