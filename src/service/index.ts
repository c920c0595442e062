// `cliphook/service`: the simulated service for a user's own tests and tools. Kept out of the main entry,
// so an app that only receives webhooks never loads the service's image and upload libraries.
export { createServiceApp, startService } from './http/app.js';
export type { AppOptions, ServiceApp, ServiceAssistant, StartedService } from './http/app.js';
export type { TestHelpers, JournalFilter } from './testing/http/test-helpers.js';
export { Service, DEFAULT_BALANCE, DEFAULT_FILE } from './service.js';
export type { ServiceOptions, Caller, ImageFetcher } from './service.js';
export { SimulatedClock } from './core/clock.js';
export type { SimulatedClockOptions, RealTimers } from './core/clock.js';
export type { Speed } from './core/simulate.js';
export { clipPrice, assistantClipPrice, imagePrice, MODEL_SPECS, VIDEO_MODELS, API_DISCOUNT, IMAGE_PRICES } from './contract/pricing.js';
export { fetchImage } from './core/fetch-image.js';
export { ServiceError } from './contract/problems.js';
