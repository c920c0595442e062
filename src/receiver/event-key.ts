// The dedupe key of an event, the only key a delivery claims. It is derived from the signed body, since
// X-Service-Delivery is not signed: a captured request replayed under a forged delivery id finds it taken.
// Issue 30 item 2: the key is the event and the clip id alone, because a clip reaches one terminal state
// once, so the same event of the same clip is the same event, whatever else its body says: every attempt
// of a delivery (a fresh `delivered_at`), a copy under another delivery id, and the copy reconciliation
// builds from GET /videos (whose `video_url` is a signed link, new on every read).
import type { WebhookEvent } from '../protocol/events.js';

/**
 * `e:<event>:<clip id>`: the same on every runtime (no hash, so the web receiver needs no async crypto).
 * @example eventKey({ event: 'video.completed', id: 48213 }) // 'e:video.completed:48213'
 */
export function eventKey(event: Pick<WebhookEvent, 'event' | 'id'>): string {
  return `e:${event.event}:${event.id}`;
}
