export { createReceiver, Receiver, WebhookReceiver } from './core.js';
export type { ReceiverOptions, WebhookContext, WebhookHandler, ErrorListener, ReceiverReply } from './core.js';
export type { NodeMiddleware } from './express.js';
export { verifyWebhook } from './verify.js';
export type { VerifyOptions, VerifiedWebhook, HeaderSource } from './verify.js';
export { MemoryDeliveryStore, DEFAULT_RETENTION_MS } from './delivery-store.js';
export type { DeliveryStore, DeliveryStoreOptions, ClaimOutcome } from './delivery-store.js';
export { FileDeliveryStore, DEFAULT_DELIVERIES_FILE } from './file-delivery-store.js';
export type { FileDeliveryStoreOptions } from './file-delivery-store.js';
