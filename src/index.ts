// The public API of cliphook. Nothing is exported from deeper paths.
export {
  HEADER_EVENT,
  HEADER_SIGNATURE,
  HEADER_DELIVERY,
  SIGNATURE_PREFIX,
  CliphookError,
  WebhookVerificationError,
  WebhookHandlerError,
  InvalidPayloadError,
  InvalidCallbackUrlError,
  VIDEO_ERROR_CODES,
  WEBHOOK_EVENTS,
  parseEvent,
  isWebhookEventName,
  sign,
  verifySignature,
  PROBLEM_CODES,
  PROBLEM_CONTENT_TYPE,
  problem,
  isProblemCode,
  RETRY_SCHEDULE_MS,
  MAX_ATTEMPTS,
  classifyReply,
  nextRetryDelay,
} from './protocol/index.js';
export type {
  WebhookVerificationCode,
  VideoErrorCode,
  VideoCompletedEvent,
  VideoFailedEvent,
  WebhookEvent,
  WebhookEventName,
  EventOf,
  Body,
  Problem,
  ProblemCode,
  ProblemOptions,
  UserActionKind,
  ReplyClass,
} from './protocol/index.js';
export * from './receiver/index.js';
export * from './relay/index.js';
export * from './emitter/index.js';
