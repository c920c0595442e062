// `cliphook/service`: the simulated service for a user's own tests and tools. Kept out of the main entry,
// so an app that only receives webhooks never loads the service's image and upload libraries.
import { createServiceApp as createApp, startService as start } from './http/app.js';
import type { AppOptions, ServiceApp, StartedService, StartOptions } from './http/public.js';

// The published types name no `Service` (the internal composition root): the app and the
// started service are typed by http/public.ts, and `Service` itself is not exported.

/**
 * Builds the whole v1 API of the spec (docs/service.md): `/v1`, the settings, the test helpers, the
 * pages and the assistant endpoint, as a Node request listener.
 * @example
 * const app = await createServiceApp({ file: false, speed: 'fast' });
 * http.createServer(app).listen(8080);
 */
export const createServiceApp: (options?: AppOptions) => Promise<ServiceApp> = createApp;

/**
 * Starts the service on 127.0.0.1 and a free port for a user's own tests: the in-process equivalent of
 * stripe-mock, with state, webhooks, a clock the test moves and the test helpers in process.
 * @example
 * const svc = await startService();
 * await svc.clock.advance(10_000);
 * await svc.close();
 */
export const startService: (options?: StartOptions) => Promise<StartedService> = start;

export type { AppOptions, ServiceApp, ServiceAssistant, StartedService, StartOptions } from './http/public.js';
export type { TestHelpers, JournalFilter } from './testing/http/test-helpers.js';
export type {
  AdvanceClockRequest, CreateFaultRuleRequest, CreateTestAccountRequest, DeletedFaultRule, DeletedTestAccount, FaultRule, FaultRuleAction, FaultRuleList, JournalCleared, JournalEntry, JournalList,
  ResetResponse, SeedAccountEntry, SeedAssetEntry, SeedClipEntry, SeedFixture, SeedImageEntry, SeedResult, TestAccount, TestAccountList, TestAccountSummary, TestClock, WebhookChaos, WebhookChaosMode,
  WebhookChaosRequest,
} from './testing/contract/helper-types.js';
export { DEFAULT_BALANCE, DEFAULT_FILE } from './options.js';
export type { ServiceOptions, ImageFetcher } from './options.js';
export type { ServiceRedisClient } from './core/redis/client.js';
export type { RedisClientLike, RedisDuplicateOptions } from '../store/redis-client.js';
export type { Caller } from './core/gate.js';
export { SimulatedClock } from './core/clock.js';
export type { SimulatedClockOptions, RealTimers } from './core/clock.js';
export type { Speed } from './core/simulate.js';
export { clipPrice, assistantClipPrice, imagePrice, MODEL_SPECS, VIDEO_MODELS, API_DISCOUNT, IMAGE_PRICES } from './contract/pricing.js';
export { fetchImage } from './core/fetch-image.js';
export { ServiceError } from './contract/service-error.js';
