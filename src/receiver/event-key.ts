// The dedupe key of an event, the only key a delivery claims. It is derived from the signed body, since
// X-Service-Delivery is not signed: a captured request replayed under a forged delivery id finds it taken.
// The key is the event and the clip id alone, because a clip reaches one terminal state
// once, so the same event of the same clip is the same event, whatever else its body says: every attempt
// of a delivery (a fresh `delivered_at`), a copy under another delivery id, and the copy reconciliation
// builds from GET /videos (whose `video_url` is a signed link, new on every read).
// Clip ids are per service, not per account key: an app that serves several accounts on one store gives
// each receiver a namespace, which the key then starts with.
import type { WebhookEvent } from '../protocol/events.js';

/** Longest `namespace`: it is part of every key and of a cursor's file name. */
export const MAX_NAMESPACE_LENGTH = 64;
// No ':' (the key's separator) and no '/' (the cursor's file name), so a namespace never reads as part of another key or path.
const NAMESPACE = /^[A-Za-z0-9._-]+$/;

/**
 * `e:<event>:<clip id>`, or `<namespace>:e:<event>:<clip id>` in a namespace: the same on every runtime
 * (no hash, so the web receiver needs no async crypto).
 * @example eventKey({ event: 'video.completed', id: 48213 }) // 'e:video.completed:48213'
 * @example eventKey({ event: 'video.completed', id: 48213 }, 'acct_eu') // 'acct_eu:e:video.completed:48213'
 */
export function eventKey(event: Pick<WebhookEvent, 'event' | 'id'>, namespace?: string): string {
  return namespace === undefined ? `e:${event.event}:${event.id}` : `${namespace}:e:${event.event}:${event.id}`;
}

/** The receiver's `namespace` option, checked: `undefined`, or 1 to 64 of `A-Z a-z 0-9 . _ -`; a TypeError naming it otherwise. */
export function checkNamespace(namespace: unknown): string | undefined {
  if (namespace === undefined) return undefined;
  if (typeof namespace !== 'string' || namespace.length === 0 || namespace.length > MAX_NAMESPACE_LENGTH || !NAMESPACE.test(namespace)) {
    throw new TypeError(`Expected \`namespace\` to be 1 to ${MAX_NAMESPACE_LENGTH} characters of A-Z, a-z, 0-9, '.', '_' and '-', got ${JSON.stringify(namespace)}.`);
  }
  return namespace;
}
