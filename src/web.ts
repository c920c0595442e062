// `cliphook/web`: the receiver and verification for Fetch API runtimes (Cloudflare Workers, Deno, Bun,
// browsers). Nothing reachable from here imports a Node module or uses Buffer or process
// (test/web/bundle.test.ts bundles it for the browser and runs it without Node's globals). The names are
// the Node entry's; verifyWebhook, sign and verifySignature return promises, as Web Crypto does.
export { createWebReceiver as createReceiver, WebReceiver as WebhookReceiver } from './receiver/web-receiver.js';
export type { ReceiverOptions, WebhookContext, WebhookHandler, ErrorListener, ReceiverReply, IngestOptions, IngestOutcome } from './receiver/core.js';
export type { MalformedClip, ReconcileOptions, ReconcileResult, ReconcileSchedule } from './receiver/reconcile-options.js';
export { verifyWebhookWeb as verifyWebhook } from './receiver/web-verify.js';
export type { VerifyOptions, VerifiedWebhook, HeaderSource } from './receiver/verify-core.js';
export { signWeb as sign, verifySignatureWeb as verifySignature } from './protocol/signature-web.js';
export type { Body } from './protocol/signature-form.js';
export { MemoryDeliveryStore, DEFAULT_RETENTION_MS } from './receiver/delivery-store.js';
export type { DeliveryStore, DeliveryStoreOptions, ClaimOutcome } from './receiver/delivery-store.js';
export { HEADER_EVENT, HEADER_SIGNATURE, HEADER_DELIVERY, SIGNATURE_PREFIX } from './protocol/headers.js';
export { CliphookError, WebhookVerificationError, WebhookHandlerError, HandlerTimeoutError, InvalidPayloadError, ReconcileError } from './protocol/errors.js';
export type { WebhookFailureStage } from './protocol/errors.js';
export type { WebhookVerificationCode, ReconcileErrorCode, HandlerTimeoutLimit } from './protocol/errors.js';
export { VIDEO_ERROR_CODES, WEBHOOK_EVENTS, parseEvent, isWebhookEventName } from './protocol/events.js';
export type { VideoErrorCode, VideoCompletedEvent, VideoFailedEvent, WebhookEvent, WebhookEventName, EventOf } from './protocol/events.js';
export { PROBLEM_CODES, PROBLEM_CONTENT_TYPE, problem, isProblemCode } from './protocol/problem.js';
export type { Problem, ProblemCode, ProblemOptions } from './protocol/problem.js';
