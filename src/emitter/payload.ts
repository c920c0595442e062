import { isWebhookEventName, parseEvent, WEBHOOK_EVENTS, type WebhookEventName } from '../protocol/events.js';

/**
 * Checks an event body against spec 2.12 and serialises it once, without `delivered_at` (each attempt
 * appends its own). Throws `InvalidPayloadError` for a body of the wrong shape and `TypeError` for
 * arguments that are not an event name and an object.
 */
export function serialisePayload(event: unknown, payload: unknown, now: number): string {
  if (!isWebhookEventName(event)) {
    throw new TypeError(`Expected \`event\` to be one of ${WEBHOOK_EVENTS.join(', ')}, got ${JSON.stringify(event)}.`);
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new TypeError(`Expected \`payload\` to be an object, got ${payload === null ? 'null' : typeof payload}.`);
  }
  const { event: named, delivered_at: _ignored, ...rest } = payload as Record<string, unknown>;
  if (named !== undefined && named !== event) {
    throw new TypeError(`\`payload.event\` is ${JSON.stringify(named)} but \`event\` is ${JSON.stringify(event)}.`);
  }
  const body: Record<string, unknown> = { event, ...rest };
  let text: string;
  try {
    text = JSON.stringify(body);
  } catch (error) {
    throw new TypeError(`Expected \`payload\` to be JSON-serialisable: ${(error as Error).message}`, { cause: error });
  }
  // Checked as the receiver will see it, so a malformed event fails here rather than as a permanent 400.
  parseEvent({ ...(JSON.parse(text) as object), delivered_at: new Date(now).toISOString() });
  return text;
}

/** The payload a `Delivery` shows. */
export function parsePayload(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

export type { WebhookEventName };
