import { ERROR_SENTENCES, isWebhookEventName, VIDEO_ERROR_CODES, WEBHOOK_EVENTS, type VideoErrorCode } from '../protocol/events.js';
import { freshEvent } from '../receiver/test-webhook.js';
import { ExitError } from './errors.js';

export interface BuildEventOptions {
  errorCode?: string | undefined;
  /** `key=value` pairs; values that parse as JSON (numbers, null, true, quoted strings) are taken as JSON. */
  set?: readonly string[];
  now?: number;
}

/**
 * The body for `cliphook trigger`: the event's template from `templates/events/`, a fresh video id (or the
 * one `--set id=…` gives, which the `video_url` then names) and fresh times, the error code and its
 * sentence, then every `--set` (only over a field the event has). Usage errors exit with 2.
 */
export async function buildEvent(event: string, { errorCode, set = [], now = Date.now() }: BuildEventOptions): Promise<Record<string, unknown>> {
  if (!isWebhookEventName(event)) throw new ExitError(`unknown event ${JSON.stringify(event)}; choose one of ${WEBHOOK_EVENTS.join(', ')}`, 2);
  const sets = parseSet(set);
  // The clip's id is chosen first, so what is derived from it (video_url) names that clip; a --set video_url still wins.
  const id = sets.findLast(([key]) => key === 'id')?.[1];
  const body = freshEvent(event, now, typeof id === 'number' ? id : undefined);
  if (errorCode !== undefined) {
    if (event !== 'video.failed') throw new ExitError('--error-code goes with video.failed only', 2);
    if (!(VIDEO_ERROR_CODES as readonly string[]).includes(errorCode)) {
      throw new ExitError(`unknown --error-code ${JSON.stringify(errorCode)}; choose one of ${VIDEO_ERROR_CODES.join(', ')}`, 2);
    }
    body.error_code = errorCode;
    body.error = ERROR_SENTENCES[errorCode as VideoErrorCode];
  }
  const fields = Object.keys(body).filter((key) => key !== 'event');
  for (const [key, value] of sets) {
    // A misspelt field (`--set promt=…`) would otherwise go out as an extra member nobody reads.
    if (!Object.hasOwn(body, key)) throw new ExitError(`--set ${key}: ${event} has no field \`${key}\`; its fields are ${fields.join(', ')}`, 2);
    body[key] = value;
  }
  return body;
}

/** Parses `key=value` pairs. A value that is valid JSON is taken as JSON, anything else as a string. */
export function parseSet(pairs: readonly string[]): [string, unknown][] {
  return pairs.map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw new ExitError(`--set expects key=value, got ${JSON.stringify(pair)}`, 2);
    const key = pair.slice(0, at).trim();
    if (key === '') throw new ExitError(`--set expects key=value with a key, got ${JSON.stringify(pair)}`, 2);
    const raw = pair.slice(at + 1);
    if (key === 'event' || key === 'delivered_at') throw new ExitError(`--set cannot change \`${key}\`; it is set by the command and each attempt`, 2);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Not JSON: the text itself, so `--set prompt="a red fox"` needs no inner quotes.
    }
    return [key, value];
  });
}
