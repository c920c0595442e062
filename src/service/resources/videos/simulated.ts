import { ServiceError } from '../../contract/problems.js';
import { parseSimulation, type RequestCode } from '../../core/simulate.js';

/** The sentence of a request-level `simulate:` refusal (nothing was charged). */
const SIMULATED: Record<RequestCode, string> = {
  upstream_busy: 'The generation service is busy; nothing was charged. Try again shortly.',
  no_session_available: 'No generation session is available; nothing was charged. Try again shortly.',
  generation_paused: 'Generation is paused; nothing was charged. Try again later.',
  moderation_pending: 'Checking the photos takes longer than usual; nothing was charged. Use the asset_ids when they are trusted.',
  task_create_failed: 'The task could not be created; the credits were refunded. Retry with the same Idempotency-Key.',
  internal_error: 'Something went wrong on our side; the credits were refunded. Retry with the same Idempotency-Key.',
  region_unavailable: 'Creating is unavailable where the account was last used.',
  image_fetch_failed: 'One of the image_urls could not be downloaded; upload it as an asset and use asset_ids.',
  photo_rejected: 'A photo failed moderation; send another photo.',
};

const BUSY: ReadonlySet<RequestCode> = new Set(['upstream_busy', 'no_session_available', 'generation_paused', 'moderation_pending']);

/**
 * The refusal a prompt's request-level `simulate:<code>` marker asks for (issue 11), or `null`: how a
 * user's tests make a valid clip request fail the way the spec says it can. `index` is a batch item's.
 * @example simulatedRefusal('a fox simulate:generation_paused')?.code // 'generation_paused'
 */
export function simulatedRefusal(prompt: string, index?: number): ServiceError | null {
  const simulation = parseSimulation(prompt);
  if (simulation?.kind !== 'request') return null;
  const { code } = simulation;
  return new ServiceError(code, SIMULATED[code], {
    ...(BUSY.has(code) ? { retryAfter: 5 } : {}),
    extra: { ...(index === undefined ? {} : { item_index: index }), ...(code === 'photo_rejected' ? { reason_code: 'simulated' } : {}), ...(code === 'moderation_pending' ? { asset_ids: [] } : {}) },
  });
}
