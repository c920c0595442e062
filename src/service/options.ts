import { dirname, join } from 'node:path';
import { bullmqQueue, createEmitter, FileOutbox, MemoryOutbox, type DeliveryRecord, type EmitterOptions, type WebhookEmitter } from '../emitter/index.js';
import type { WebhookChaos } from './testing/chaos-transport.js';
import { isValidToken, MIN_API_KEY_LENGTH } from './core/accounts.js';
import type { SimulatedClock } from './core/clock.js';
import type { SeedFixture } from './testing/contract/helper-types.js';
import { sharedOptions } from './core/redis/shared.js';
import type { ServiceRedisClient } from './core/redis/client.js';
import type { Speed } from './core/simulate.js';
import type { ImageFetcher } from './core/fetch-image.js';

export type { ImageFetcher } from './core/fetch-image.js';

// How a service is configured: its options, their checks, and the emitter it makes when none is given.

/** The data file of `cliphook serve` when none is given. */
export const DEFAULT_FILE = '.cliphook/service.json';

/** The first account's starting balance when none is given. */
export const DEFAULT_BALANCE = 1000;

export interface ServiceOptions {
  /** The data file (lowdb snapshot + journal, locked to one process), or `false` for memory only. @default '.cliphook/service.json' */
  file?: string | false;
  /** The simulated clock every time rule reads. @default a clock running with real time */
  clock?: SimulatedClock;
  /** How long generation takes: `fast` (a few seconds) or `realistic` (1-2 minutes, as the spec says). @default 'fast' */
  speed?: Speed;
  /** The spec's rules where local development relaxes them: https-only callbacks and image URLs, no private addresses. @default false */
  strict?: boolean;
  /** The base URL clients reach the service at, for `poll_url` and signed links. @default 'http://127.0.0.1:8080' */
  origin?: string;
  /** Fix the first account's API key (24-200 printable ASCII characters, no spaces), its webhook signing secret and its starting balance. */
  apiKey?: string;
  webhookSecret?: string;
  /**
   * The admin token of the test helpers: `Authorization: Bearer <admin token>` reaches the
   * service-wide ones (accounts, reset, the whole journal, rules for any account). 24-200 printable ASCII
   * characters without spaces, as an API key. @default a new random `adm_…` token at each start
   */
  adminToken?: string;
  /** @default 1000 */
  balance?: number;
  /**
   * A seed fixture made at start (and again at each reset), as `POST /test_helpers/seed` makes one:
   * `{ accounts, assets, clips, images }`. A bad one makes `open` reject with the 400's ServiceError (`extra.pointer`).
   */
  seed?: SeedFixture;
  /** Sends clip webhooks. @default an emitter with its outbox beside the data file (memory without a file), on `clock` */
  emitter?: WebhookEmitter;
  /** Downloads and checks an external image URL. @default `fetchImage` of fetch-image.ts (body cap, time-out, SSRF guard with --strict) */
  fetchImage?: ImageFetcher;
  /** @default Math.random */
  random?: () => number;
  /**
   * Answer a good signed media link with 302 to a short-lived storage URL (spec 4.18 lists the 302), as the
   * real service may, so a client's redirect path is exercised (`serve --media-redirect`). @default false
   */
  mediaRedirect?: boolean;
  /**
   * Requests a minute per API key before 429 (spec 8: 60). Only for load tests of your own and the
   * benchmarks: the real service allows 60. @default 60
   */
  rateLimitPerMinute?: number;
  /** Where failures the service cannot answer with (a write of a transition) are reported. @default console.warn */
  warn?: (message: string) => void;
  /**
   * Shares the rate limits and idempotency records with every `serve` process on this Redis, so several
   * behind one load balancer count one limit per key and never charge a retried request twice: a
   * connected ioredis client (not closed by the service; `ServiceRedisClient` names what the service calls
   * on it)…
   */
  redis?: ServiceRedisClient;
  /** …or a `redis://` URL. @example 'redis://127.0.0.1:6379' */
  redisUrl?: string;
  /** Prefix of the service's Redis keys. @default 'cliphook:service:' */
  redisPrefix?: string;
}

/** The BullMQ queue of the service's webhooks: the emitter's default, or one under a `redisPrefix` given. */
function serviceQueue(redisPrefix: string | undefined): { prefix?: string } {
  const prefix = redisPrefix?.replace(/:+$/, '');
  return prefix ? { prefix } : {};
}

/**
 * Checks the options `Service.open` takes before anything is opened, and returns the Redis sharing they
 * ask for (or `undefined`). A bad value is a `TypeError` naming the option.
 */
export function checkOptions(options: ServiceOptions): ReturnType<typeof sharedOptions> {
  const { balance, apiKey, webhookSecret, adminToken, rateLimitPerMinute } = options;
  if (balance !== undefined && !(Number.isSafeInteger(balance) && balance >= 0)) throw new TypeError(`Expected \`balance\` to be a whole number of credits >= 0, got ${balance}.`);
  if (apiKey !== undefined && !isValidToken(apiKey)) {
    const length = typeof apiKey === 'string' ? `, got ${(apiKey as string).length}` : '';
    throw new TypeError(`Expected \`apiKey\` to be ${MIN_API_KEY_LENGTH}-200 printable ASCII characters without spaces${length} (a shorter key could be guessed).`);
  }
  if (adminToken !== undefined && !isValidToken(adminToken)) {
    const length = typeof adminToken === 'string' ? `, got ${(adminToken as string).length}` : '';
    throw new TypeError(`Expected \`adminToken\` to be ${MIN_API_KEY_LENGTH}-200 printable ASCII characters without spaces${length}.`);
  }
  if (adminToken !== undefined && adminToken === apiKey) throw new TypeError('Expected `adminToken` to differ from `apiKey`.');
  if (webhookSecret !== undefined && (typeof webhookSecret !== 'string' || webhookSecret === '')) throw new TypeError('Expected `webhookSecret` to be a non-empty string.');
  const redisOptions = sharedOptions(options);
  if (rateLimitPerMinute !== undefined && !(Number.isSafeInteger(rateLimitPerMinute) && rateLimitPerMinute > 0)) {
    throw new TypeError(`Expected \`rateLimitPerMinute\` to be a positive integer, got ${rateLimitPerMinute}.`);
  }
  return redisOptions;
}

/**
 * The emitter of a service that was given none: on Redis every serve process takes attempts from one
 * BullMQ queue (the default one, which `cliphook deliveries --redis` reads); otherwise the outbox sits
 * beside the data file (in memory without one).
 */
export function serviceEmitter(
  options: ServiceOptions,
  file: string | false,
  clock: SimulatedClock,
  redisOptions: ReturnType<typeof sharedOptions>,
  hooks: { chaos?: WebhookChaos; stamp?: (record: Readonly<DeliveryRecord>) => number | undefined } = {},
): WebhookEmitter {
  const { chaos, stamp } = hooks;
  const emitterOptions: EmitterOptions = {
    ...(redisOptions
      ? { queue: bullmqQueue({ ...(redisOptions.redisUrl ? { url: redisOptions.redisUrl } : { connection: redisOptions.redis! }), ...serviceQueue(options.redisPrefix) }) }
      : { store: file === false ? new MemoryOutbox() : new FileOutbox({ file: join(dirname(file), 'service-outbox.json') }) }),
    // One queue for every account: it runs on the service's own time; each attempt's delivered_at is its account's (stamp).
    clock: clock.base,
    // Local development delivers to http://localhost; --strict applies the spec's https-only rule and the SSRF guard.
    allowPrivateNetworks: !(options.strict ?? false),
    logger: { info: () => undefined, warn: (message) => options.warn?.(message), error: (message) => options.warn?.(message) },
  };
  // The chaos wraps the built-in transport, so --strict keeps its connect-time address check; it goes
  // through the emitter's public options (`wrapTransport`, `deliveredAt`).
  if (chaos) emitterOptions.wrapTransport = (next) => chaos.wrap(next);
  if (stamp) emitterOptions.deliveredAt = stamp;
  return createEmitter(emitterOptions);
}
