import { randomBytes } from 'node:crypto';
import { clipPrice, type VideoModel } from '../../contract/pricing.js';
import { ServiceError } from '../../contract/problems.js';
import { videoCommand, type CanonicalVideo, type VideoCommand, type VideoStatus } from '../../contract/videos.js';
import { checkClipCallback } from '../../core/callback-url.js';
import type { Credits } from '../../core/credits.js';
import type { Files } from '../../core/files.js';
import { insufficient, type Caller } from '../../core/gate.js';
import type { MediaSigner } from '../../core/media-signer.js';
import { parseSimulation, SIMULATE_WORD, type RequestCode, type Simulation } from '../../core/simulate.js';
import type { ServiceStore } from '../../core/store.js';
import type { Assets } from '../assets/assets.js';
import type { Fetched, References } from '../references.js';
import { VideoLifecycle, type Video, type VideoTables } from './lifecycle.js';
import { retryOutcome, retryRefusal } from './retry.js';
import { batchItemView, createdView, retryView, videoView, type ViewContext } from './views.js';
import type { Site } from '../../core/site.js';

export interface VideoCommandsOptions {
  store: ServiceStore<VideoTables>;
  lifecycle: VideoLifecycle;
  assets: Assets;
  references: References;
  credits: Credits;
  files: Files;
  signer: MediaSigner;
  clock: { now(): number };
  site: Site;
  /** `--strict`: callback URLs https only and never private (spec 4.1). */
  strict: boolean;
}

/** What a clip costs: the API price, or the assistant's base price (spec 5.7) when its tools create it. */
export type Price = (model: VideoModel, seconds: number) => number;

/** A request's photos, checked: the asset ids the clip uses, and external photos downloaded for it. */
interface Photos {
  command: VideoCommand;
  assetIdsUsed: number[] | null;
  fetched: Fetched[];
}

/** The commands of spec 3.1 and 4.1-4.6 on clips: typed input, typed answers, a `ServiceError` for every refusal. */
export class VideoCommands {
  readonly #options: VideoCommandsOptions;
  /** Tasks whose retry is being made (spec 4.6: 409 retry_in_progress). */
  readonly #retrying = new Set<number>();

  constructor(options: VideoCommandsOptions) {
    this.#options = options;
  }

  /** The command of a request for this caller: its key's default assets and the callback URL's check. */
  command(caller: Caller, request: CanonicalVideo, { defaultAssets = true }: { defaultAssets?: boolean } = {}): VideoCommand {
    return videoCommand(request, { defaultAssetIds: defaultAssets ? caller.key.defaultAssetIds : [], callback: (url) => this.#callback(url) });
  }

  /** POST /videos (spec 4.1): the clip, pending and charged. */
  async create(caller: Caller, command: VideoCommand, { price = clipPrice }: { price?: Price } = {}) {
    const photos = await this.#photos(caller, command);
    this.#simulated(caller, photos);
    const cost = price(command.model, command.duration);
    if (this.#options.credits.charge(caller.account, cost, 1)) throw insufficient(caller.account, cost);
    const video = this.#createTask(caller, photos, cost);
    return createdView(video, command.warnings, this.#view());
  }

  /** POST /videos/batch (spec 4.2): all or nothing, one charge for the total, a task and a webhook per item. */
  async createBatch(caller: Caller, commands: readonly VideoCommand[]) {
    const checked: Photos[] = [];
    for (const [index, command] of commands.entries()) {
      try {
        checked.push(await this.#photos(caller, command));
      } catch (error) {
        throw error instanceof ServiceError ? new ServiceError(error.code, `items[${index}]: ${error.detail}`, { extra: { ...error.extra, item_index: index } }) : error;
      }
    }
    for (const [index, photos] of checked.entries()) this.#simulated(caller, photos, index);
    const prices = checked.map(({ command }) => clipPrice(command.model, command.duration));
    const total = prices.reduce((sum, price) => sum + price, 0);
    if (this.#options.credits.charge(caller.account, total, checked.length)) throw insufficient(caller.account, total);
    const batchId = `batch_${this.#options.clock.now().toString(36)}${randomBytes(3).toString('hex')}`;
    const videos = checked.map((photos, index) => this.#createTask(caller, photos, prices[index]!, batchId));
    const ctx = this.#view();
    return {
      batch_id: batchId,
      total_credits_used: total,
      items_count: videos.length,
      created_at: new Date(videos[0]!.createdAt).toISOString(),
      items: videos.map((video, index) => batchItemView(video, index, ctx)),
    };
  }

  /** GET /videos/{id} (spec 4.4): fresh signed links on every call. */
  get(caller: Caller, id: number) {
    return videoView(this.own(caller, id), this.#view());
  }

  /** GET /videos (spec 4.3): newest first. */
  list(caller: Caller, { limit, offset, status }: { limit: number; offset: number; status?: VideoStatus | undefined }) {
    // Clip index item: the caller's clips only, whatever other accounts keep.
    const mine = this.#options.lifecycle.of(caller.account.id).filter((video) => status === undefined || video.status === status);
    mine.sort((a, b) => b.id - a.id);
    const ctx = this.#view();
    return { data: mine.slice(offset, offset + limit).map((video) => videoView(video, ctx)), total: mine.length, limit, offset };
  }

  /** DELETE /videos/{id} (spec 4.5): cancel and refund while pending, 409 already_rendering, delete once finished. */
  remove(caller: Caller, id: number) {
    const video = this.own(caller, id);
    const outcome = this.#options.lifecycle.remove(video);
    if (outcome === 'already_rendering') throw new ServiceError('already_rendering', `Video ${video.id} is already rendering; it will finish and be charged.`);
    return { success: true, action: outcome.action, id: video.id, credits_refunded: outcome.refunded };
  }

  /** POST /videos/{id}/retry (spec 3.1, 4.6): a new task from the original's parameters, at the API price. */
  async retry(caller: Caller, id: number) {
    const { lifecycle, references, credits, store } = this.#options;
    const original = this.own(caller, id);
    // External photos were moderated for the first request only; the caller's character photos are trusted assets.
    const external = (url: string) => !url.startsWith('asset://') && !references.isCharacter(caller.account.id, url);
    const refusal = retryRefusal(original, this.#retrying.has(original.id), external);
    if (refusal) throw ServiceError.from(refusal);
    const gone = (original.assetIdsUsed ?? []).find((assetId) => !references.usable(caller.account.id, assetId));
    if (gone !== undefined) throw new ServiceError('invalid_asset_id', `Task ${original.id} used asset ${gone}, which is gone or no longer trusted; submit a new request.`);
    this.#retrying.add(original.id);
    try {
      const price = clipPrice(original.model, original.duration);
      if (credits.charge(caller.account, price, 1)) throw insufficient(caller.account, price);
      const retry = lifecycle.create({
        accountId: caller.account.id, keyId: original.keyId, prompt: original.prompt, model: original.model, duration: original.duration,
        ratio: original.ratio, resolution: original.resolution, imageUrls: original.imageUrls, assetIdsUsed: original.assetIdsUsed,
        assetSource: original.assetSource, subjectConsent: original.subjectConsent, callbackUrl: original.callbackUrl, charged: price,
        retryOf: original.id, batchId: null, sticky: original.sticky, outcome: retryOutcome(original),
      });
      lifecycle.markRetried(original, retry);
      // Saved while the task is marked as retrying, so a second retry meanwhile is 409 retry_in_progress.
      await store.commit();
      return retryView(retry, this.#view());
    } finally {
      this.#retrying.delete(original.id);
    }
  }

  /** The caller's clip, or the 404 of spec 4.4: unknown ids and other accounts' look the same. */
  own(caller: Caller, id: number): Video {
    const video = this.#options.lifecycle.get(id);
    if (!video || video.accountId !== caller.account.id) throw new ServiceError('not_found', `No video ${id}.`);
    return video;
  }

  #view(): ViewContext {
    const { site, signer, clock } = this.#options;
    const now = clock.now();
    return { origin: site.origin, signer, now, estimate: (video) => Math.max(0, Math.ceil((video.plan.endAt - now) / 1000)) };
  }

  /** The callback URL's safety check (spec 4.1), shared with seed fixtures (core/callback-url.ts). */
  #callback(url: string): { url: string; warning?: { code: string; detail: string } } {
    return checkClipCallback(url, { strict: this.#options.strict });
  }

  /**
   * Checks a command's photos: the caller's own trusted assets; `asset://` URIs and the service's own AI
   * character photos as those assets; other URLs downloaded and checked as the service would.
   */
  async #photos(caller: Caller, command: VideoCommand): Promise<Photos> {
    const { references } = this.#options;
    const accountId = caller.account.id;
    if (command.assetSource === 'asset_ids') {
      references.assetIds(accountId, command.assetIds!);
      return { command, assetIdsUsed: command.assetIds, fetched: [] };
    }
    if (command.assetSource === 'default_asset_ids') {
      const usable = caller.key.defaultAssetIds.filter((id) => references.usable(accountId, id));
      if (usable.length > 0) return { command, assetIdsUsed: usable, fetched: [] };
      // The key's defaults were deleted or are not trusted: a clip with neither prompt nor photos is no request.
      if (command.prompt.trim() === '') throw new ServiceError('missing_input', "Send a prompt, image_urls or asset_ids: the key's default assets are not usable.");
      return { command: { ...command, assetSource: 'none' }, assetIdsUsed: null, fetched: [] };
    }
    if (command.assetSource !== 'image_urls') return { command, assetIdsUsed: null, fetched: [] };
    const { assetIds, fetched } = await references.imageUrls(accountId, command.imageUrls);
    return { command, assetIdsUsed: assetIds.length > 0 ? assetIds : null, fetched };
  }

  /**
   * A valid request the simulated upstream refuses, as `simulate:<code>` asks: nothing is charged. Photos
   * downloaded for a 503 moderation_pending become the caller's pending assets, "to use later" (spec 5).
   */
  #simulated(caller: Caller, { command, fetched }: Photos, index?: number): void {
    const refusal = simulatedRefusal(simulationIn(command.prompt), index);
    if (!refusal) return;
    if (refusal.code !== 'moderation_pending' || fetched.length === 0) throw refusal;
    const assetIds = fetched.map((photo) => {
      this.#options.files.keepAsset(photo.sha256, photo.ext, photo.bytes);
      const name = new URL(photo.url).pathname.split('/').pop() || `photo.${photo.ext}`;
      return this.#options.assets.add({ accountId: caller.account.id, sha256: photo.sha256, name, fileSize: photo.bytes.length, mimeType: photo.mime, ext: photo.ext, subjectConsent: command.subjectConsent }).asset.id;
    });
    // The assets stay although the request is refused: they are what the answer tells the caller to use.
    throw new ServiceError(refusal.code, refusal.detail, { ...(refusal.retryAfter === undefined ? {} : { retryAfter: refusal.retryAfter }), extra: { ...refusal.extra, asset_ids: assetIds }, keep: true });
  }

  /** Creates the task of a checked command; the caller has charged `price` in this turn. */
  #createTask(caller: Caller, { command, assetIdsUsed }: Photos, price: number, batchId: string | null = null): Video {
    const simulation = simulationIn(command.prompt);
    return this.#options.lifecycle.create({
      accountId: caller.account.id, keyId: caller.key.id, prompt: command.prompt, model: command.model, duration: command.duration,
      ratio: command.ratio, resolution: command.resolution, imageUrls: command.imageUrls, assetIdsUsed, assetSource: command.assetSource,
      subjectConsent: command.subjectConsent, callbackUrl: command.callbackUrl, charged: price, retryOf: null, batchId,
      sticky: simulation?.kind === 'task' && simulation.sticky, outcome: simulation?.kind === 'task' ? simulation.code : 'done',
    });
  }
}

/** The sentence of a request-level `simulate:` refusal (nothing was charged). */
const SIMULATED: Record<RequestCode, string> = {
  upstream_busy: 'The generation service is busy; nothing was charged. Try again shortly.',
  no_session_available: 'No generation session is available; nothing was charged. Try again shortly.',
  generation_paused: 'Generation is paused; nothing was charged. Try again later.',
  moderation_pending: 'Checking the photos takes longer than usual; nothing was charged. Use the asset_ids when they are trusted.',
  task_create_failed: 'The task could not be created; the credits were refunded. Retry with the same Idempotency-Key.',
  internal_error: 'Something went wrong on our side; the credits were refunded. Retry with the same Idempotency-Key.',
  region_unavailable: 'Creating is unavailable where the account was last used.',
  image_fetch_failed: 'One of the image_urls could not be downloaded; upload it as an asset and use asset_ids.',
  photo_rejected: 'A photo failed moderation; send another photo.',
};

const BUSY: ReadonlySet<RequestCode> = new Set(['upstream_busy', 'no_session_available', 'generation_paused', 'moderation_pending']);

/** A prompt's `simulate:` marker; a prompt without the word is not parsed (a plain clip's prompt costs one search). */
function simulationIn(prompt: string): Simulation | null {
  return prompt.includes(SIMULATE_WORD) ? parseSimulation(prompt) : null;
}

/**
 * The refusal a prompt's request-level `simulate:<code>` marker asks for, or `null`: how a
 * user's tests make a valid clip request fail the way the spec says it can. `index` is a batch item's.
 */
function simulatedRefusal(simulation: Simulation | null, index?: number): ServiceError | null {
  if (simulation?.kind !== 'request') return null;
  const { code } = simulation;
  return new ServiceError(code, SIMULATED[code], {
    ...(BUSY.has(code) ? { retryAfter: 5 } : {}),
    extra: { ...(index === undefined ? {} : { item_index: index }), ...(code === 'photo_rejected' ? { reason_code: 'simulated' } : {}), ...(code === 'moderation_pending' ? { asset_ids: [] } : {}) },
  });
}
