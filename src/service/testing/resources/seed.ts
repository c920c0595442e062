import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../../../version.js';
import { CHARACTER_AGES, CHARACTER_STYLES, type ImageCommand } from '../../contract/images.js';
import { MODEL_SPECS } from '../../contract/pricing.js';
import type { Account, Accounts, ApiKey } from '../../core/accounts.js';
import { onTimeOf, type LaneClock } from '../../core/clock.js';
import type { Files } from '../../core/files.js';
import { parseSimulation } from '../../core/simulate.js';
import type { ServiceStore } from '../../core/store.js';
import { checkFixture, fixtureError, planSeed, type SeedOwner } from '../../testing/seed.js';
import type { Assets } from '../../resources/assets/assets.js';
import type { ImageJobs } from '../../resources/images/jobs.js';
import type { ImageRenderer } from '../../resources/images/job.js';
import type { VideoLifecycle } from '../../resources/videos/lifecycle.js';
import { SeedPictures } from './seed-pictures.js';

/** An empty record whose every name, `__proto__` included, is an own member (JSON.stringify writes them all). */
const byName = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** The built-in sample photos of a seeded asset (the sample posters the service already ships). */
const SAMPLES = { photo: 'poster-1x1.jpg', product: 'poster-4x3.jpg' } as const;

export interface SeedCommandsOptions {
  store: ServiceStore<never>;
  accounts: Accounts;
  assets: Assets;
  files: Files;
  videos: VideoLifecycle;
  images: ImageJobs;
  /** What draws an image job's pictures: the service's; a seed draws each kind once (`SeedPictures`). */
  renderer: ImageRenderer;
  /** The starting balance of an account the fixture gives none: the service's (`--balance`, 1000). */
  startingBalance: () => number;
  /** `--strict`: a clip's `callback_url` is checked as `POST /v1/videos` then checks it. @default false */
  strict?: boolean;
  /** Puts what is made for an account on its own time. @default no accounts' times */
  clock?: LaneClock;
}

/** What POST /test_helpers/seed answers: the id of everything made, by its name in the fixture. */
export interface SeedAnswer {
  accounts: Record<string, { id: number; api_key: string; webhook_secret: string }>;
  assets: Record<string, number>;
  clips: Record<string, number>;
  images: Record<string, number>;
}

/**
 * Seeding without HTTP: `POST /test_helpers/seed`, `startService({ seed })` and `serve --seed`.
 * The fixture is checked whole first (a refusal is 400 with `pointer`, testing/seed.ts), then made as one
 * unit of the store: a step that fails takes every row of the fixture back. Nothing is charged.
 */
export class SeedCommands {
  readonly #options: SeedCommandsOptions;

  constructor(options: SeedCommandsOptions) {
    this.#options = options;
  }

  /** Checks and makes a fixture; run inside a unit of work (the HTTP pipeline's, or `run`'s). */
  async apply(input: unknown): Promise<SeedAnswer> {
    const check = checkFixture(input, { strict: this.#options.strict ?? false });
    if (!check.ok) throw fixtureError(check.errors);
    const { accounts, assets, files, videos, images } = this.#options;
    const clock: LaneClock = this.#options.clock ?? { now: Date.now, setTimeout: () => undefined, clearTimeout: () => undefined };
    const made = new Map<string, { account: Account; key: ApiKey }>();
    // Records without a prototype, so a name such as `__proto__` is a member like any other.
    const answer: SeedAnswer = { accounts: byName(), assets: byName(), clips: byName(), images: byName() };
    const pictures = new SeedPictures(this.#options.renderer, files);
    const owner = (who: SeedOwner) => {
      const found = who.kind === 'default' ? accounts.first() : made.get(who.name);
      if (!found) throw new TypeError(`No account ${who.kind === 'default' ? 'default' : who.name} to seed into.`);
      return found;
    };
    for (const step of planSeed(check.fixture, { balance: this.#options.startingBalance() })) {
      if (step.kind === 'account') {
        const created = accounts.create({ balance: step.balance, name: step.name });
        made.set(step.name, created);
        answer.accounts[step.name] = { id: created.account.id, api_key: created.key.token, webhook_secret: created.key.webhookSecret };
      } else if (step.kind === 'asset') {
        const bytes = readFileSync(fileURLToPath(new URL(`templates/media/${SAMPLES[step.sample]}`, packageRoot)));
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        files.keepAsset(sha256, 'jpg', bytes);
        const accountId = owner(step.account).account.id;
        const asset = onTimeOf(clock, accountId, () => assets.addTrusted({ accountId, sha256, name: `${step.name}.jpg`, fileSize: bytes.length, mimeType: 'image/jpeg', ext: 'jpg', trustedUntil: null }));
        answer.assets[step.name] = asset.id;
      } else if (step.kind === 'clip') {
        const { account, key } = owner(step.account);
        const simulation = parseSimulation(step.prompt);
        // Made on its account's time, whoever seeds it: the admin's is the service's.
        const video = onTimeOf(clock, account.id, () => videos.seed(
          {
            accountId: account.id, keyId: key.id, prompt: step.prompt, model: step.model, duration: step.duration, ratio: step.ratio, resolution: MODEL_SPECS[step.model].resolution,
            imageUrls: [], assetIdsUsed: null, assetSource: 'none', subjectConsent: null, callbackUrl: step.callbackUrl, charged: 0, retryOf: null, batchId: null,
            sticky: simulation?.kind === 'task' && simulation.sticky, outcome: simulation?.kind === 'task' ? simulation.code : 'done',
          },
          step.status,
          step.errorCode,
        ));
        answer.clips[step.name] = video.id;
      } else {
        const { account, key } = owner(step.account);
        const character = step.type === 'character';
        const command: ImageCommand = {
          description: step.description, type: step.type, template: null, fields: {}, text: null, aspectRatio: step.aspectRatio, quality: step.quality, count: step.count,
          character: character ? { age: CHARACTER_AGES[1], style: CHARACTER_STYLES[0] } : null, assetIds: [], imageUrls: [], subjectConsent: null, maxCredits: null, price: 0,
        };
        const job = await onTimeOf(clock, account.id, () => images.seed(account, key.id, command, { status: step.status, made: step.made, errorCode: step.errorCode, renderer: pictures }));
        answer.images[step.name] = job.id;
      }
    }
    return answer;
  }

  /** Checks and makes a fixture as one unit of work, saved before it resolves (`startService({ seed })`, `serve --seed`). */
  run(input: unknown): Promise<SeedAnswer> {
    return this.#options.store.unit(() => this.apply(input));
  }
}
