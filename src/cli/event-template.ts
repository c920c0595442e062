import { readFile } from 'node:fs/promises';
import { randomInt } from 'node:crypto';
import { VIDEO_ERROR_CODES, type VideoErrorCode, type WebhookEventName } from '../protocol/events.js';
import { isWebhookEventName, WEBHOOK_EVENTS } from '../protocol/events.js';
import { packageRoot } from '../version.js';
import { ExitError } from './errors.js';

/** The `error` sentence that goes with each `error_code` of spec 2.9 in a `video.failed` event. */
export const ERROR_SENTENCES: Readonly<Record<VideoErrorCode, string>> = Object.freeze({
  image_fetch_failed: 'One of the images could not be downloaded. Upload it as an asset and use asset_ids instead.',
  content_rejected: 'The request was rejected by content moderation. Change the prompt or images and try again.',
  copyright_rejected: 'The request looks like copyrighted material. Change the prompt or images and try again.',
  output_rejected: 'The generated clip did not pass moderation. Change the prompt and try again.',
  real_person_rejected: 'The images show a real person without consent. Use other images or confirm consent.',
  task_config_error: 'The combination of settings is not supported. Change the model, duration or ratio.',
  upstream_busy: 'The generation service is busy right now. Nothing was charged; try again in a few minutes.',
  upstream_unavailable: 'The generation service is unavailable right now. Nothing was charged; one retry is allowed.',
  upstream_timeout: 'Generation took longer than 10 minutes and was stopped. Nothing was charged; one retry is allowed.',
  upstream_auth_failed: 'The generation service refused our credentials. Contact support; do not retry.',
  upstream_bad_request: 'The generation service refused the request. Check the settings and try again.',
  upstream_error: 'The generation service failed. Nothing was charged; one retry is allowed.',
  cancelled: 'The clip was cancelled before it finished. Nothing was charged.',
});

export interface BuildEventOptions {
  errorCode?: string | undefined;
  /** `key=value` pairs; values that parse as JSON (numbers, null, true, quoted strings) are taken as JSON. */
  set?: readonly string[];
  now?: number;
}

/**
 * The body for `cliphook trigger`: the event's template from `templates/events/`, a fresh video id and
 * fresh times, the error code and its sentence, then every `--set`. Usage errors exit with 2.
 */
export async function buildEvent(event: string, { errorCode, set = [], now = Date.now() }: BuildEventOptions): Promise<Record<string, unknown>> {
  if (!isWebhookEventName(event)) throw new ExitError(`unknown event ${JSON.stringify(event)}; choose one of ${WEBHOOK_EVENTS.join(', ')}`, 2);
  const body = await loadTemplate(event);
  body.id = randomInt(100_000, 1_000_000_000);
  body.created_at = iso(now - 97_000);
  body.completed_at = iso(now);
  delete body.delivered_at; // each attempt sets its own
  if (event === 'video.completed') body.video_url = `https://app.example.com/videos/${body.id}`;
  if (errorCode !== undefined) {
    if (event !== 'video.failed') throw new ExitError('--error-code goes with video.failed only', 2);
    if (!(VIDEO_ERROR_CODES as readonly string[]).includes(errorCode)) {
      throw new ExitError(`unknown --error-code ${JSON.stringify(errorCode)}; choose one of ${VIDEO_ERROR_CODES.join(', ')}`, 2);
    }
    body.error_code = errorCode;
    body.error = ERROR_SENTENCES[errorCode as VideoErrorCode];
  }
  for (const [key, value] of parseSet(set)) body[key] = value;
  return body;
}

/** Reads `templates/events/<event>.json` from the package root (it ships in `files`). */
export async function loadTemplate(event: WebhookEventName): Promise<Record<string, unknown>> {
  const text = await readFile(new URL(`templates/events/${event}.json`, packageRoot), 'utf8');
  return JSON.parse(text) as Record<string, unknown>;
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

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
