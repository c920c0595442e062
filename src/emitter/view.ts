import { parsePayload } from './payload.js';
import type { Delivery, DeliveryRecord } from './types.js';

/** When a delivery last did something: its last attempt, or its creation. */
export function lastActivity(record: DeliveryRecord): number {
  return record.attempts.at(-1)?.at ?? record.createdAt;
}

/** The public view of a record: a copy, without the secret. */
export function toDelivery(record: DeliveryRecord): Delivery {
  return {
    id: record.id,
    url: record.url,
    event: record.event,
    state: record.state,
    payload: parsePayload(record.payload),
    attempts: record.attempts.map((attempt) => ({ ...attempt })),
    nextAttemptAt: record.nextAttemptAt,
    createdAt: record.createdAt,
    retry: record.retry,
  };
}
