import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Delivery, WebhookEmitter } from '../emitter/index.js';
import { Accounts, type AccountTables } from './core/accounts.js';
import { Credits } from './core/credits.js';
import { AuthFailures } from './core/auth-failures.js';
import { SimulatedClock } from './core/clock.js';
import { fetchImage } from './core/fetch-image.js';
import { Files } from './core/files.js';
import { Gate, RATE_LIMIT, RateLimiter } from './core/gate.js';
import { Idempotency, type IdempotencyRow } from './core/idempotency.js';
import { MediaSigner } from './core/media-signer.js';
import { openShared, type SharedRecords } from './core/redis/shared.js';
import { OwnedRows } from './core/owned-rows.js';
import { ServiceStore } from './core/store.js';
import type { Row } from './core/table.js';
import { checkOptions, DEFAULT_BALANCE, DEFAULT_FILE, serviceEmitter, type ServiceOptions } from './options.js';
import { AccountCommands } from './resources/account/commands.js';
import { Assets, type AssetTables } from './resources/assets/assets.js';
import { AssetCommands } from './resources/assets/commands.js';
import { ClockCommands } from './resources/clock.js';
import { TestAccountCommands } from './testing/resources/accounts.js';
import { RequestJournalCommands } from './testing/resources/requests.js';
import { FaultRuleCommands } from './testing/resources/faults.js';
import { SeedCommands, type SeedAnswer } from './testing/resources/seed.js';
import { FaultRules } from './testing/faults.js';
import { WebhookChaos } from './testing/chaos-transport.js';
import { clipChaos } from './testing/clip-chaos.js';
import { WebhookChaosCommands } from './testing/resources/webhook-chaos.js';
import { WebhookTimes } from './resources/videos/webhook-times.js';
import { RequestJournal } from './testing/journal.js';
import { SecretIndex } from './testing/redact.js';
import { ImageFiles } from './resources/images/characters.js';
import { ImageCommands } from './resources/images/commands.js';
import { ImageJobs } from './resources/images/jobs.js';
import { type ImageJobTables } from './resources/images/job.js';
import { SharpRenderer } from './resources/images/render.js';
import { PhotoUploads, type PhotoUploadTables } from './resources/photos/uploads.js';
import { References } from './resources/references.js';
import { VideoCommands } from './resources/videos/commands.js';
import { VideoLifecycle, type VideoTables } from './resources/videos/lifecycle.js';
import { MediaFiles } from './resources/videos/media.js';
import { ClipWebhooks } from './resources/videos/webhooks.js';
import type { Site } from './core/site.js';

/** The service's own settings, kept in its data file so signed links outlive a restart. */
interface MetaRow {
  id: 'service';
  mediaSecret: string;
}

/**
 * How far the service's own clock is ahead of real time (what the test clock was advanced by), kept so a
 * restart resumes on the same simulated time.
 */
interface ClockRow {
  id: 'clock';
  aheadMs: number;
  /** How far each account's own time is ahead of the service's, by account id; absent for none. */
  accounts?: Record<string, number>;
}

/** The tables of the assistant endpoint: typed by its own modules, which open them from this store. */
const ASSISTANT_TABLES = ['assistant', 'assistant_spend', 'assistant_call', 'oauth'] as const;

export type ServiceTables = AccountTables & VideoTables & AssetTables & ImageJobTables & PhotoUploadTables & { idempotency: IdempotencyRow; meta: MetaRow | ClockRow } & Record<(typeof ASSISTANT_TABLES)[number], Row>;

const TABLES = ['account', 'key', 'video', 'asset', 'image_job', 'photo_upload', 'idempotency', 'meta', ...ASSISTANT_TABLES] as const;

export { DEFAULT_BALANCE, DEFAULT_FILE } from './options.js';
export type { ImageFetcher, ServiceOptions } from './options.js';
export type { Caller } from './core/gate.js';

/**
 * The simulated Clip and Image Generation Service, without HTTP: the composition root. It opens the store
 * and the clock, builds the core (accounts, the gate, idempotency), the state machines and the commands of
 * each resource, and wires their events (a clip ends: its webhook; an image job ends: a character's photos
 * become assets). It has no rules of its own: those live in `contract/`, `core/` and `resources/`, and the
 * adapters (`http/`, `assistant/`, `pages/`) call the same commands, so `/v1` and `/mcp` cannot disagree.
 * @example
 * const service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }) });
 * const { caller } = await service.gate.admit(service.gate.identify(`Bearer ${service.first().apiKey}`));
 * await service.videos.get(caller, 1);
 */
export class Service {
  /** Where clients reach the service (`poll_url`, signed links): known once the server listens. */
  origin: string;
  readonly strict: boolean;
  readonly clock: SimulatedClock;
  readonly store: ServiceStore<ServiceTables>;
  readonly files: Files;
  readonly accounts: Accounts;
  readonly gate: Gate;
  readonly idempotency: Idempotency;
  readonly emitter: WebhookEmitter;
  /** The state machines, for what waits on them (the assistant's get_clip, get_image, get_photo). */
  readonly state: { readonly videos: VideoLifecycle; readonly images: ImageJobs; readonly assets: Assets };
  readonly videos: VideoCommands;
  readonly images: ImageCommands;
  readonly assets: AssetCommands;
  readonly account: AccountCommands;
  readonly media: MediaFiles;
  readonly testClock: ClockCommands;
  /** Accounts on demand (the test helpers'). */
  readonly testAccounts: TestAccountCommands;
  /** The request journal: what the HTTP adapter records after each answer, redacted and bounded. */
  readonly journal: RequestJournal;
  readonly requests: RequestJournalCommands;
  /** Fault rules: what the HTTP adapter asks before each request of /v1 and /settings. */
  readonly faultRules: FaultRules;
  readonly faults: FaultRuleCommands;
  /** Webhook chaos per account: `POST /test_helpers/webhook_chaos`. */
  readonly webhookChaos: WebhookChaosCommands;
  /** Seed fixtures: `POST /test_helpers/seed`, `startService({ seed })`, `serve --seed`. */
  readonly seeds: SeedCommands;
  /** What the `seed` option made (ids by name), or `null` without one; made again at each reset. */
  seeded: SeedAnswer | null = null;
  /** The assistant's photo upload links (`start_photo_upload`, the page at /photos/upload/<token>). */
  readonly photoUploads: PhotoUploads;
  /** The admin token of the test helpers: `options.adminToken`, or a new random one. */
  readonly adminToken: string;
  /** Reports a failure no answer can carry (a write to Redis after the answer was settled, say). */
  readonly warn: (message: string) => void;
  readonly #close: Array<() => unknown>;

  private constructor(store: ServiceStore<ServiceTables>, clock: SimulatedClock, options: ServiceOptions, emitter: WebhookEmitter, shared: SharedRecords | undefined, { chaos, times }: { chaos: WebhookChaos | undefined; times: WebhookTimes }) {
    const { speed = 'fast', strict = false, origin = 'http://127.0.0.1:8080', random, warn = (message) => console.warn(`cliphook serve: ${message}`) } = options;
    const choice = random ? { random } : {};
    const onError = (error: Error) => warn(`cannot save a change: ${error.message}`);
    // The clock's own methods, bound once, so no closure of the wiring runs on each request.
    const now = clock.now.bind(clock);
    this.store = store;
    this.clock = clock;
    this.strict = strict;
    this.origin = origin.replace(/\/+$/, '');
    this.warn = warn;
    this.adminToken = options.adminToken ?? `adm_${randomBytes(24).toString('base64url')}`;
    this.emitter = emitter;
    this.files = new Files(options.file === false ? false : (options.file ?? DEFAULT_FILE));
    const files = this.files;
    // The parts read `this.origin` where they name it (it is set once the server listens): the service is their `Site`.
    const site: Site = this;

    // Core: who is calling, and what every resource reads.
    // Every secret that can still sign or authenticate, kept as it changes, is what the journal redacts.
    const secrets = new SecretIndex();
    this.accounts = new Accounts(store, now, secrets);
    const credits = new Credits(this.accounts);
    const serviceNow = clock.nowOf.bind(clock, null);
    // An address's failures count on the service's time, whichever account it acts for.
    const failures = new AuthFailures({ now: serviceNow });
    const limiter = shared?.limiter ?? new RateLimiter({ now, sweepNow: serviceNow, ...(options.rateLimitPerMinute === undefined ? {} : { limit: options.rateLimitPerMinute }) });
    this.gate = new Gate({ accounts: this.accounts, limiter, failures, shared: shared !== undefined, adminToken: this.adminToken, warn, identified: clock.actFor.bind(clock) });
    this.idempotency = new Idempotency({ table: store.table('idempotency'), now, sweepNow: serviceNow, ...(shared ? { shared: shared.idempotency } : {}) });
    const meta = (store.table('meta').get('service') as MetaRow | undefined) ?? (store.table('meta').put({ id: 'service', mediaSecret: randomBytes(32).toString('base64url') }) as MetaRow);
    const signer = new MediaSigner(meta.mediaSecret);
    secrets.set('service', [this.adminToken, meta.mediaSecret]);

    // The state machines: assets < images < videos.
    const assets = new Assets({ store, clock, speed, onError, ...choice });
    const renderer = new SharpRenderer({
      dir: files.images,
      // An edit shows the photos it was given: the caller's assets, read from where uploads are kept.
      sources: async (job) => job.command.assetIds.flatMap((id) => {
        const asset = assets.get(job.accountId, id);
        return asset ? [readFileSync(files.asset(asset.sha256, asset.ext))] : [];
      }),
    });
    const jobs = new ImageJobs(store, { accounts: this.accounts, credits, renderer, clock, speed, onError, ...choice });
    const lifecycle = new VideoLifecycle({ store, accounts: this.accounts, credits, clock, speed, onError, ...choice });
    this.state = { videos: lifecycle, images: jobs, assets };
    this.photoUploads = new PhotoUploads(store, now, { sweepNow: serviceNow, nowOf: (account) => clock.nowOf(account) });

    // The commands.
    this.assets = new AssetCommands({ store, assets, files, site });
    const imageFiles = new ImageFiles({ store, jobs, assets, assetCommands: this.assets, files, site, onError: (error) => warn(`cannot keep a character's photos: ${error.message}`) });
    // External image_urls are downloaded and checked by their bytes, as the real service does (spec 4.1).
    const fetcher = options.fetchImage ?? ((url, { strict: isStrict }) => fetchImage(url, { strict: isStrict }));
    const references = new References({ assets, character: (accountId, url) => imageFiles.character(accountId, url), fetchImage: fetcher, strict });
    this.images = new ImageCommands({ store, jobs, files: imageFiles, references, credits, clock, site });
    this.videos = new VideoCommands({ store, lifecycle, assets, references, credits, files, signer, clock, site, strict });
    this.account = new AccountCommands({ accounts: this.accounts, credits, assets, videosOf: (accountId) => lifecycle.of(accountId) });
    this.media = new MediaFiles({ lifecycle, signer, clock, site, redirect: options.mediaRedirect ?? false });
    this.testClock = new ClockCommands({ clock, store: store as never, warn, accounts: this.accounts });
    this.journal = new RequestJournal({ secrets });
    this.requests = new RequestJournalCommands(this.journal);
    this.faultRules = new FaultRules({ now, accountExists: (id) => this.accounts.get(id) !== undefined });
    this.faults = new FaultRuleCommands(this.faultRules);
    this.webhookChaos = new WebhookChaosCommands(this.accounts);
    const owned = new OwnedRows(store, TABLES);
    this.testAccounts = new TestAccountCommands({
      accounts: this.accounts,
      startingBalance: () => options.balance ?? DEFAULT_BALANCE,
      // An account deleted takes all it owns; its files go once that is saved.
      // Its rows are found by the owner indexes, so the cost is its own rows; its timers go with them.
      owned: (id) => {
        const files = [...owned.of('image_job', id).map((job) => imageFiles.purge(job)), ...owned.of('asset', id).map((asset) => this.assets.drop(asset))];
        owned.remove(id);
        return () => files.forEach((remove) => remove());
      },
      commit: () => store.commit(),
      forgotten: (id) => {
        clock.forget(id);
        this.faultRules.clear({ account: id });
        // The journal's own per-account removal (it keeps entries per account).
        this.journal.clear({ account: id });
        // The service's own clock keeps each account's lead in the data file: write it without this one.
        if (options.clock === undefined) this.#saveClock();
      },
    });
    this.seeds = new SeedCommands({ store: store as never, accounts: this.accounts, assets, files, videos: lifecycle, images: jobs, renderer, clock, strict, startingBalance: () => options.balance ?? DEFAULT_BALANCE });

    // The events: a clip that ends sends its webhook (spec 6).
    const webhooks = new ClipWebhooks({ emitter, accounts: this.accounts, store, site, secret: `${meta.mediaSecret}:deliveries`, warn, clock, chaos: chaos && clipChaos(chaos), owned: (id, account) => times.track(id, account), clipsOf: (accountId) => lifecycle.of(accountId) });
    lifecycle.on('terminal', (video) => void webhooks.send(video));
    const ownsEmitter = options.emitter === undefined;
    // Each attempt of the service's emitter names its account from start (stamp) to end.
    const attempted = (delivery: Delivery) => times.ended(delivery.id);
    if (ownsEmitter) emitter.on('attempt', attempted);
    this.#close = [
      // A request whose write failed is taken back row by row; the timers kept beside the rows follow (the
      // indexes are the tables', kept in step by them). Webhooks that waited
      // for the disk go as soon as a write succeeds.
      store.onRollback(() => {
        lifecycle.resync();
        assets.resync();
        jobs.resync();
      }),
      store.onWritable(() => webhooks.resume()),
      // `clock.advance()` sees each outcome (and what it schedules) before moving on. An
      // account's advance waits for its own account's work only (a custom emitter's attempts, which name
      // no account, for all); the service's advance for every account's.
      clock.settleWith(async (account) => {
        const busy = account === null
          ? () => webhooks.busy || jobs.busy || times.busy
          : () => webhooks.sendingOf(account) || jobs.busyOf(account) || times.busyOf(account) || (!ownsEmitter && webhooks.attempting);
        const giveUp = Date.now() + 15_000;
        while (busy() && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 1));
      }),
      // A clock the caller passed in is theirs; the service's own keeps its lead in the data file.
      options.clock === undefined ? clock.onAdvance(() => this.#saveClock()) : () => undefined,
      // An account's advance brings its webhook retries when they fall due on its own time.
      clock.addLaneSource(times),
      () => imageFiles.stop(),
      () => webhooks.stop(),
      () => lifecycle.stop(),
      () => assets.stop(),
      () => jobs.stop(),
      () => ownsEmitter && emitter.off('attempt', attempted),
      async () => ownsEmitter && (await emitter.stop()),
      () => clock.stop(),
      () => store.close(),
      () => shared?.close(),
      // A service in memory leaves nothing behind, its files included.
      () => files.close(),
    ];
    this.#wipe = () => {
      // Every row but the service's own settings (its media secret); ids start again from 1.
      for (const name of TABLES) {
        const table = store.table(name);
        for (const row of [...table.values()]) if (!(name === 'meta' && row.id === 'service')) table.remove(row.id);
        store.restartIds(name);
      }
      lifecycle.resync();
      assets.resync();
      jobs.resync();
      if (limiter instanceof RateLimiter) limiter.clear();
      failures.clear();
      this.journal.clear();
      this.faultRules.clear();
      chaos?.clear();
      times.clear();
      // The service's own clock loses its lead; every account's time is the service's again.
      if (options.clock === undefined) clock.rewind();
      else clock.clearLeads();
    };
    this.#resume = () => {
      lifecycle.resume();
      assets.resume();
      jobs.resume();
      webhooks.resume();
    };
  }

  readonly #resume: () => void;
  readonly #wipe: () => void;
  readonly #firstOptions: { balance?: number | undefined; apiKey?: string | undefined; webhookSecret?: string | undefined; seed?: unknown } = {};

  /**
   * Back to a fresh start with the same options (`POST /test_helpers/reset`): every account,
   * clip, image job, asset, idempotency record, journal entry, fault rule and rate window is gone, the
   * service's own clock loses its lead, and the first account comes back as it started: the same key and
   * webhook secret, the starting balance. Resolves once that is saved.
   */
  async reset(): Promise<{ reset: true; now: string }> {
    const first = this.first();
    this.#wipe();
    this.accounts.create({ balance: this.#firstOptions.balance ?? DEFAULT_BALANCE, token: first.apiKey, webhookSecret: first.webhookSecret });
    await this.store.commit();
    // The same options: a fixture the service was started with is made again.
    if (this.#firstOptions.seed !== undefined) this.seeded = await this.seeds.run(this.#firstOptions.seed);
    return { reset: true, now: new Date(this.clock.now()).toISOString() };
  }

  /**
   * Records how far the clock is ahead of real time; written with the next commit, or at close. As no
   * request's change: time that moved is not taken back with a request that failed.
   */
  #saveClock(): void {
    this.store.background(() => {
      const accounts = Object.fromEntries([...this.clock.leads()].map(([id, ms]) => [String(id), Math.round(ms)]));
      this.store.table('meta').put({ id: 'clock', aheadMs: Math.max(0, Math.round(this.clock.ahead)), ...(Object.keys(accounts).length > 0 ? { accounts } : {}) });
      this.store.commit().catch((error: Error) => this.warn(`cannot save the clock yet: ${error.message}`));
    });
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
    // The service's own clock resumes as far ahead of real time as it was (the time it
    // was stopped passes as real time does), before anything in flight is re-armed on it.
    const saved = store.table('meta').get('clock') as ClockRow | undefined;
    if (options.clock === undefined && saved && Number.isFinite(saved.aheadMs) && saved.aheadMs > 0) await clock.advance(saved.aheadMs);
    // And each account's own time as far ahead of the service's as it was.
    if (options.clock === undefined && saved?.accounts) {
      for (const [id, ms] of Object.entries(saved.accounts)) if (/^\d+$/.test(id) && Number.isFinite(ms) && ms > 0) clock.restoreLead(Number(id), ms);
    }
    // Webhook chaos shapes the deliveries of the service's own emitter; a custom emitter sends plainly.
    const chaos = options.emitter === undefined ? new WebhookChaos() : undefined;
    let made: { service?: Service; emitter?: WebhookEmitter } = {};
    const times = new WebhookTimes({ clock, accountOf: (secret) => made.service?.accounts.ofSecret(secret), emitter: () => made.emitter, warn: (message) => (options.warn ?? console.warn)(message) });
    const emitter = options.emitter ?? serviceEmitter(options, file, clock, redisOptions, { ...(chaos ? { chaos } : {}), stamp: (record) => {
      // Each attempt of the emitter: chaos learns its number, and its delivered_at is its account's time.
      chaos?.attempting(record.id, record.attempts.length + 1);
      return times.stamp(record);
    } });
    made.emitter = emitter;
    try {
      if (options.emitter === undefined) await emitter.start();
      const service = new Service(store, clock, options, emitter, shared, { chaos, times });
      made = { service, emitter };
      service.#firstAccount({ balance, apiKey, webhookSecret });
      Object.assign(service.#firstOptions, { balance, seed: options.seed });
      service.#resume();
      await store.commit();
      if (options.seed !== undefined) {
        try {
          service.seeded = await service.seeds.run(options.seed);
        } catch (error) {
          await service.close().catch(() => undefined);
          throw error;
        }
      }
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

  /** Stops timers and the emitter, writes a fresh snapshot, and removes a service in memory's files. */
  async close(): Promise<void> {
    for (const step of this.#close) await step();
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
