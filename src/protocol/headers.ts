/** Header names of the webhook wire contract (spec section 6.2). Lower-case, as Node exposes them. */
export const HEADER_EVENT = 'x-service-event';
export const HEADER_SIGNATURE = 'x-service-signature';
export const HEADER_DELIVERY = 'x-service-delivery';

/** The prefix of every `X-Service-Signature` value. */
export const SIGNATURE_PREFIX = 'sha256=';
