import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { WebhookEmitter } from '../emitter/index.js';
import { Accounts, MIN_BALANCE_FOR_KEYS, type Account, type AccountTables, type ApiKey } from './core/accounts.js';
import { Assets, type AssetTables } from './resources/assets/assets.js';
import type { AssistantRow, ConnectionTables } from './assistant/connections.js';
import type { OAuthTables } from './assistant/oauth/adapter.js';
import type { SpendingTables } from './assistant/spending.js';
import { SimulatedClock } from './core/clock.js';
import { Credits } from './core/credits.js';
import { fetchImage } from './core/fetch-image.js';
import { Idempotency, type IdempotencyRow } from './core/idempotency.js';
import { ImageJobs, type ImageJobTables } from './resources/images/jobs.js';
import { registerCharacterAssets } from './images/operations.js';
import { SharpRenderer } from './resources/images/render.js';
import { MediaSigner } from './core/media-signer.js';
import { checkOptions, DEFAULT_BALANCE, DEFAULT_FILE, serviceEmitter, type ImageFetcher, type ServiceOptions } from './options.js';
import { RATE_LIMIT, RateLimiter } from './core/rate-limit.js';
import { admit, refuseAuth, refuseFailures, type Authenticated, type GuardResult } from './guard.js';
import { AuthFailures } from './core/auth-failures.js';
import { tokenHash } from './core/redis/client.js';
import type { RedisRateLimiter } from './core/redis/rate-limit.js';
import { openShared, type SharedRecords } from './core/redis/shared.js';
import { PhotoUploads, type PhotoUploadTables } from './resources/photos/uploads.js';
import { fail, type Result } from './result.js';
import { ServiceStore } from './core/store.js';
import { VideoLifecycle, type Video, type VideoTables } from './resources/videos/lifecycle.js';
import type { Speed } from './core/simulate.js';
import { ClipWebhooks } from './resources/videos/webhooks.js';

/** The service's own settings, kept in its data file so signed links outlive a restart. */
interface MetaRow {
  id: 'service';
  mediaSecret: string;
}

/**
 * How far the service's own clock is ahead of real time (what the test clock was advanced by), kept so a
 * restart resumes on the same simulated time (issue 20 item 8).
 */
interface ClockRow {
  id: 'clock';
  aheadMs: number;
}

export type ServiceTables = AccountTables & VideoTables & AssetTables & ImageJobTables & PhotoUploadTables & ConnectionTables & SpendingTables & OAuthTables & { idempotency: IdempotencyRow; meta: MetaRow | ClockRow };

const TABLES = ['account', 'key', 'video', 'asset', 'image_job', 'photo_upload', 'idempotency', 'meta', 'assistant', 'assistant_spend', 'assistant_call', 'oauth'] as const;

export { DEFAULT_BALANCE, DEFAULT_FILE } from './options.js';
export type { ImageFetcher, ServiceOptions } from './options.js';

export type { GuardResult } from './guard.js';

/** Who is calling, once `guard` let them through, and the rate-limit headers every keyed response carries. */
export interface Caller {
  account: Account;
  /** The key it acts with: the bearer key, or for an assistant signed in with OAuth, the account's oldest live key. */
  key: ApiKey;
  headers: Record<string, string>;
  /** On `/mcp`: the assistant connection whose limits apply. */
  assistant?: AssistantRow;
}

/**
 * The simulated Clip and Image Generation Service, without HTTP: its records, its clock, its rules and the
 * webhooks of finished clips. Operations (`videos/operations.ts`, …) answer `Result`s, so the `/v1`
 * routes and the assistant's tools share one implementation and cannot disagree.
 * @example
 * const service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }) });
 * const caller = await service.guard(`Bearer ${service.first().apiKey}`);
 */
export class Service {
  origin: string;
  readonly strict: boolean;
  readonly speed: Speed;
  readonly clock: SimulatedClock;
  readonly store: ServiceStore<ServiceTables>;
  readonly accounts: Accounts;
  readonly credits: Credits;
  readonly videos: VideoLifecycle;
  readonly assets: Assets;
  readonly images: ImageJobs;
  /** The assistant's photo upload links (`start_photo_upload`, the page at /photos/upload/<token>). */
  readonly photoUploads: PhotoUploads;
  /**
   * Where uploaded assets (`assets/<sha256>.<ext>`) and made images (`images/<token>.<ext>`) are kept: beside
   * the data file, or a temporary folder for a service in memory.
   */
  readonly filesDir: string;
  readonly idempotency: Idempotency;
  readonly limiter: RateLimiter | RedisRateLimiter;
  /** Failed authentications per client address (issue 20 item 6), in this process, on the service's clock. */
  readonly authFailures: AuthFailures;
  readonly signer: MediaSigner;
  readonly emitter: WebhookEmitter;
  readonly fetchImage: ImageFetcher;
  /** Tasks whose retry is being created (spec 4.6: 409 retry_in_progress). */
  readonly retrying = new Set<number>();
  readonly #warn: (message: string) => void;
  readonly #ownsEmitter: boolean;
  readonly #webhooks: ClipWebhooks;
  readonly #unsettle: () => void;
  readonly #unwatchClock: () => void;
  readonly #unhook: Array<() => void>;
  readonly #shared: SharedRecords | undefined;

  private constructor(store: ServiceStore<ServiceTables>, clock: SimulatedClock, options: ServiceOptions, emitter: WebhookEmitter, shared: SharedRecords | undefined) {
    const { speed = 'fast', strict = false, origin = 'http://127.0.0.1:8080', random, warn = (message) => console.warn(`cliphook serve: ${message}`) } = options;
    this.store = store;
    this.clock = clock;
    this.speed = speed;
    this.strict = strict;
    this.origin = origin.replace(/\/+$/, '');
    this.#warn = warn;
    // External image_urls are downloaded and checked by their bytes, as the real service does (spec 4.1).
    this.fetchImage = options.fetchImage ?? ((url, { strict: isStrict }) => fetchImage(url, { strict: isStrict }));
    const now = () => clock.now();
    this.accounts = new Accounts(store, now);
    this.credits = new Credits(this.accounts);
    const onError = (error: Error) => warn(`cannot save a change: ${error.message}`);
    this.videos = new VideoLifecycle({ store, accounts: this.accounts, credits: this.credits, clock, speed, onError, ...(random ? { random } : {}) });
    this.assets = new Assets({ store, clock, speed, onError, ...(random ? { random } : {}) });
    this.photoUploads = new PhotoUploads(store, now);
    this.filesDir = options.file === false ? mkdtempSync(join(tmpdir(), 'cliphook-service-')) : join(dirname(options.file ?? DEFAULT_FILE), 'service-files');
    const renderer = new SharpRenderer({
      dir: join(this.filesDir, 'images'),
      // An edit shows the photos it was given: the caller's assets, read from where uploads are kept.
      sources: async (job) =>
        job.command.assetIds.flatMap((id) => {
          const asset = this.assets.get(job.accountId, id);
          return asset ? [readFileSync(this.assetPath(asset.sha256, asset.ext))] : [];
        }),
    });
    this.images = new ImageJobs(store, { accounts: this.accounts, credits: this.credits, renderer, clock, speed, onError, ...(random ? { random } : {}) });
    this.#shared = shared;
    this.idempotency = new Idempotency({ table: store.table('idempotency'), now, ...(shared ? { shared: shared.idempotency } : {}) });
    this.limiter = shared?.limiter ?? new RateLimiter({ now, ...(options.rateLimitPerMinute === undefined ? {} : { limit: options.rateLimitPerMinute }) });
    this.authFailures = new AuthFailures({ now });
    const meta = (store.table('meta').get('service') as MetaRow | undefined) ?? (store.table('meta').put({ id: 'service', mediaSecret: randomBytes(32).toString('base64url') }) as MetaRow);
    this.signer = new MediaSigner(meta.mediaSecret);
    this.emitter = emitter;
    this.#ownsEmitter = options.emitter === undefined;
    this.#webhooks = new ClipWebhooks({ emitter, accounts: this.accounts, store, origin: () => this.origin, secret: `${meta.mediaSecret}:deliveries`, warn, clock });
    this.videos.on('terminal', (video) => void this.#webhooks.send(video));
    // Issue 20 item 9: a request whose write failed was taken back row by row; the timers and indexes
    // kept beside the rows follow. Webhooks that waited for the disk go as soon as a write succeeds.
    this.#unhook = [
      store.onRollback(() => {
        this.accounts.resync();
        this.videos.resync();
        this.assets.resync();
        this.images.resync();
        this.photoUploads.resync();
      }),
      store.onWritable(() => this.#webhooks.resume()),
    ];
    this.#unsettle = clock.settleWith(() => this.#settled());
    // A clock the caller passed in is theirs; the service's own keeps its lead in the data file.
    this.#unwatchClock = options.clock === undefined ? clock.onAdvance(() => this.#saveClock()) : () => undefined;
  }

  /**
   * Records how far the clock is ahead of real time; written with the next commit, or at close. As no
   * request's change: time that moved is not taken back with a request that failed.
   */
  #saveClock(): void {
    this.store.background(() => {
      this.store.table('meta').put({ id: 'clock', aheadMs: Math.max(0, Math.round(this.clock.ahead)) });
      this.store.commit().catch((error: Error) => this.#warn(`cannot save the clock yet: ${error.message}`));
    });
  }

  /**
   * Resolves once no webhook is being queued or attempted and no image job's files are being made, so an
   * advance of the clock sees each outcome (and what it schedules) before moving on. Bounded in real time.
   */
  async #settled(): Promise<void> {
    const giveUp = Date.now() + 15_000;
    while ((this.#webhooks.busy || this.images.busy) && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  /** Opens the data file (or memory), makes the first account if there is none, and resumes what was in flight. */
  static async open(options: ServiceOptions = {}): Promise<Service> {
    const { file = DEFAULT_FILE, balance, apiKey, webhookSecret } = options;
    const redisOptions = checkOptions(options);
    const clock = options.clock ?? new SimulatedClock();
    const shared = redisOptions && (await openShared(redisOptions, { now: () => clock.now(), limit: options.rateLimitPerMinute ?? RATE_LIMIT }));
    let store: ServiceStore<ServiceTables>;
    try {
      store = await ServiceStore.open<ServiceTables>({ file, tables: TABLES, retry: clock });
    } catch (error) {
      await shared?.close();
      throw error;
    }
    // Issue 20 item 8: the service's own clock resumes as far ahead of real time as it was (the time it
    // was stopped passes as real time does), before anything in flight is re-armed on it.
    const saved = store.table('meta').get('clock') as ClockRow | undefined;
    if (options.clock === undefined && saved && Number.isFinite(saved.aheadMs) && saved.aheadMs > 0) await clock.advance(saved.aheadMs);
    const emitter = options.emitter ?? serviceEmitter(options, file, clock, redisOptions);
    try {
      if (options.emitter === undefined) await emitter.start();
      const service = new Service(store, clock, options, emitter, shared);
      service.#firstAccount({ balance, apiKey, webhookSecret });
      service.videos.resume();
      service.assets.resume();
      service.images.resume();
      // A character's photos become trusted assets once its job ends (spec 2.7 animate: trusted).
      registerCharacterAssets(service, { onError: (error) => service.#warn(`cannot keep a character's photos: ${error.message}`) });
      service.#webhooks.resume();
      await store.commit();
      return service;
    } catch (error) {
      if (options.emitter === undefined) await emitter.stop().catch(() => undefined);
      await store.close().catch(() => undefined);
      await shared?.close();
      throw error;
    }
  }

  /** The first account's key, secret and balance: what `cliphook serve` prints at start-up. */
  first(): { accountId: number; apiKey: string; webhookSecret: string; balance: number } {
    const { account, key } = this.accounts.first()!;
    return { accountId: account.id, apiKey: key.token, webhookSecret: key.webhookSecret, balance: account.balance };
  }

  /**
   * The checks every keyed endpoint makes first (spec 4, 5 and 8): the bearer key (401 with
   * `WWW-Authenticate`), 60 requests a minute (429 with `Retry-After`), and a balance of at least 10
   * credits (402), which the account settings skip, being how one tops up. With the client's `address`,
   * an unknown key counts against it, and an address past its failures is refused (429) first.
   */
  guard(authorization: string | undefined, { lowBalanceOk = false, address }: { lowBalanceOk?: boolean; address?: string | undefined } = {}): Promise<GuardResult> {
    if (address !== undefined) {
      const gate = this.authFailures.gate(address);
      if (!gate.allowed) return Promise.resolve(refuseFailures(gate));
    }
    const who = this.accounts.authenticate(authorization);
    if (who === 'invalid_api_key' && address !== undefined) this.authFailures.fail(address);
    if (typeof who === 'string') return Promise.resolve(refuseAuth(who));
    return this.admit({ ...who, limitName: this.limitName(who.key) }, { lowBalanceOk });
  }

  /** The rate limit and balance checks of `guard`, for a caller authenticated another way (an OAuth token on `/mcp`). */
  admit(who: Authenticated, { lowBalanceOk = false } = {}): Promise<GuardResult> {
    return admit({ limiter: this.limiter, warn: this.#warn, insufficient: (account, detail) => this.insufficient(account, MIN_BALANCE_FOR_KEYS, detail) }, who, lowBalanceOk);
  }

  /** The name an API key's rate-limit window is counted under: its id, or in Redis its token's hash (each process numbers its own ids). */
  limitName(key: ApiKey): string {
    return this.#shared ? tokenHash(key.token) : key.id;
  }

  /** Reports a failure no response can carry (a write to Redis after the answer was settled, say). */
  warn(message: string): void {
    this.#warn(message);
  }

  /** 402 insufficient_credits with `required`, `balance` and the top-up action (spec 7). */
  insufficient(account: Account, required: number, detail?: string): Result {
    return fail('insufficient_credits', {
      detail: detail ?? `This costs ${required} credits; the balance is ${account.balance}.`,
      userActionUrl: `${this.origin}/settings/top-up`,
      extra: { required, balance: account.balance },
    });
  }

  /** Where the bytes of an uploaded asset are kept: once per sha256, shared by the accounts that uploaded them. */
  assetPath(sha256: string, ext: string): string {
    return join(this.filesDir, 'assets', `${sha256}.${ext}`);
  }

  /** Seconds until a task is expected to end (spec 2.2 `estimated_time_seconds`). */
  estimateSeconds(video: Video): number {
    return Math.max(0, Math.ceil((video.plan.endAt - this.clock.now()) / 1000));
  }

  /** Stops timers and the emitter, and writes a fresh snapshot. */
  async close(): Promise<void> {
    this.#unsettle();
    this.#unwatchClock();
    for (const unhook of this.#unhook) unhook();
    this.#webhooks.stop();
    this.videos.stop();
    this.assets.stop();
    this.images.stop();
    if (this.#ownsEmitter) await this.emitter.stop();
    this.clock.stop();
    await this.store.close();
    await this.#shared?.close();
    // A service in memory leaves nothing behind, its files included.
    if (this.store.file === false) await rm(this.filesDir, { recursive: true, force: true });
  }

  #firstAccount({ balance, apiKey, webhookSecret }: { balance?: number | undefined; apiKey?: string | undefined; webhookSecret?: string | undefined }): void {
    const first = this.accounts.first();
    if (!first) {
      this.accounts.create({ balance: balance ?? DEFAULT_BALANCE, ...(apiKey ? { token: apiKey } : {}), ...(webhookSecret ? { webhookSecret } : {}) });
      return;
    }
    // Flags given again on a later start pin the key, the secret and the balance to what they say.
    if (apiKey !== undefined || webhookSecret !== undefined) this.accounts.update(first.key, { ...(apiKey ? { token: apiKey } : {}), ...(webhookSecret ? { webhookSecret } : {}) });
    if (balance !== undefined && first.account.balance !== balance) {
      first.account.balance = balance;
      this.accounts.save(first.account);
    }
  }
}
