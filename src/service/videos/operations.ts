import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Asset } from '../resources/assets/assets.js';
import { characterAsset } from '../images/operations.js';
import { createOnce, type Created, type CreateHooks } from '../create-once.js';
import { clipPrice, type VideoModel } from '../contract/pricing.js';
import { fail, ok, refused, type Result } from '../result.js';
import type { Caller, Service } from '../service.js';
import { parseSimulation, type RequestCode } from '../core/simulate.js';
import { validateBatch } from './batch.js';
import { VideoLifecycle, type Video } from '../resources/videos/lifecycle.js';
import { retryOutcome, retryRefusal } from '../resources/videos/retry.js';
import { validateVideo, type Refusal, type VideoCommand } from './validate.js';
import { batchItemView, createdView, retryView, videoView, type ViewContext } from '../resources/videos/views.js';

/** Spec 4.3 and 8. */
const VIDEO_STATUSES = ['pending', 'generating', 'done', 'error', 'cancelled'] as const;

const view = (service: Service): ViewContext => ({ origin: service.origin, signer: service.signer, now: service.clock.now(), estimate: (video) => service.estimateSeconds(video) });

/** The sentence of a request-level `simulate:` problem (nothing was charged). */
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

/** The request-level simulation of a prompt, as its problem; `null` when there is none. */
function simulatedProblem(prompt: unknown, index?: number): Result | null {
  const simulation = typeof prompt === 'string' ? parseSimulation(prompt) : null;
  if (simulation?.kind !== 'request') return null;
  const code = simulation.code;
  const retryAfter = ['upstream_busy', 'no_session_available', 'generation_paused', 'moderation_pending'].includes(code) ? 5 : undefined;
  return fail(code, {
    detail: SIMULATED[code],
    ...(retryAfter ? { retryAfter } : {}),
    extra: { ...(index === undefined ? {} : { item_index: index }), ...(code === 'photo_rejected' ? { reason_code: 'simulated' } : {}), ...(code === 'moderation_pending' ? { asset_ids: [] } : {}) },
  });
}

/** An external photo downloaded for a request: kept only if moderation is slow (503 moderation_pending). */
interface Fetched {
  url: string;
  bytes: Buffer;
  mime: string;
  ext: string;
  sha256: string;
}

type Photos = { ok: true; command: VideoCommand; assetIdsUsed: number[] | null; fetched: Fetched[] } | { ok: false; refusal: Refusal };

/**
 * Checks a command's photos: the caller's own trusted assets; `asset://` URIs and the service's own AI
 * character photos (spec 2.7: usable by their url until trusted_until) as those assets; other URLs
 * downloaded and checked as the service would.
 */
async function checkPhotos(service: Service, caller: Caller, command: VideoCommand): Promise<Photos> {
  const owned = (id: number): Asset | undefined => {
    const asset = service.assets.get(caller.account.id, id);
    return asset && service.assets.usable(asset) ? asset : undefined;
  };
  if (command.assetSource === 'asset_ids') {
    const bad = command.assetIds!.find((id) => !owned(id));
    if (bad !== undefined) return { ok: false, refusal: { code: 'invalid_asset_id', detail: `Asset ${bad} is not yours, or not moderated yet.` } };
    return { ok: true, command, assetIdsUsed: command.assetIds, fetched: [] };
  }
  if (command.assetSource === 'default_asset_ids') {
    const usable = caller.key.defaultAssetIds.filter((id) => owned(id));
    if (usable.length > 0) return { ok: true, command, assetIdsUsed: usable, fetched: [] };
    // The key's defaults were deleted or are not trusted: a clip with neither prompt nor photos is no request.
    if (command.prompt.trim() === '') return { ok: false, refusal: { code: 'missing_input', detail: "Send a prompt, image_urls or asset_ids: the key's default assets are not usable." } };
    return { ok: true, command: { ...command, assetSource: 'none' }, assetIdsUsed: null, fetched: [] };
  }
  if (command.assetSource !== 'image_urls') return { ok: true, command, assetIdsUsed: null, fetched: [] };
  const bad = command.assetUris.find((id) => !owned(id));
  if (bad !== undefined) return { ok: false, refusal: { code: 'invalid_image_url', detail: `asset://${bad} is not one of your moderated assets.` } };
  const used = [...command.assetUris];
  const fetched: Fetched[] = [];
  for (const url of command.imageUrls) {
    if (url.startsWith('asset://')) continue;
    const character = characterAsset(service, caller.account.id, url);
    if (character) {
      used.push(character.id);
      continue;
    }
    const result = await service.fetchImage(url, { strict: service.strict });
    if (!result.ok) return { ok: false, refusal: { code: result.code, detail: result.detail } };
    if (result.bytes && result.mime && result.ext && result.sha256) fetched.push({ url, bytes: result.bytes, mime: result.mime, ext: result.ext, sha256: result.sha256 });
  }
  return { ok: true, command, assetIdsUsed: used.length > 0 ? used : null, fetched };
}

/**
 * Spec 5: external photos whose moderation takes longer than about 40 s answer 503 moderation_pending
 * "with the asset_ids to use later": the downloaded photos become the caller's assets, pending.
 */
function pendingAssets(service: Service, caller: Caller, command: VideoCommand, fetched: readonly Fetched[]): number[] {
  return fetched.map((photo) => {
    const path = service.assetPath(photo.sha256, photo.ext);
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, photo.bytes, { mode: 0o600 });
    }
    const name = new URL(photo.url).pathname.split('/').pop() || `photo.${photo.ext}`;
    return service.assets.add({ accountId: caller.account.id, sha256: photo.sha256, name, fileSize: photo.bytes.length, mimeType: photo.mime, ext: photo.ext, subjectConsent: command.subjectConsent }).asset.id;
  });
}

/** Creates the task of a checked command; the caller has charged `price` in this turn. */
function createTask(service: Service, caller: Caller, command: VideoCommand, price: number, assetIdsUsed: number[] | null, extra: { batchId?: string } = {}): Video {
  const simulation = parseSimulation(command.prompt);
  caller.account.usage.videosCreated++;
  return service.videos.create({
    accountId: caller.account.id, keyId: caller.key.id, prompt: command.prompt, model: command.model, duration: command.duration,
    ratio: command.ratio, resolution: command.resolution, imageUrls: command.imageUrls, assetIdsUsed, assetSource: command.assetSource,
    subjectConsent: command.subjectConsent, callbackUrl: command.callbackUrl, charged: price, retryOf: null, batchId: extra.batchId ?? null,
    sticky: simulation?.kind === 'task' && simulation.sticky, outcome: simulation?.kind === 'task' ? simulation.code : 'done',
  });
}

/**
 * POST /videos (spec 4.1). `price` is what the clip costs: the API price, or the assistant's base price
 * (spec 5.7) when the assistant endpoint's tools create it through this same operation.
 */
export function createVideo(
  service: Service,
  caller: Caller,
  body: unknown,
  idempotencyKey?: string | string[],
  { price: priceOf = clipPrice, beforeCommit }: { price?: (model: VideoModel, seconds: number) => number } & CreateHooks = {},
): Promise<Result> {
  return createOnce(service, caller, idempotencyKey, '/v1/videos', body, async (): Promise<Created> => {
    const validated = validateVideo(body, { strict: service.strict, defaultAssetIds: caller.key.defaultAssetIds });
    if (!validated.ok) return { result: refused(validated.refusal) };
    const command = validated.value;
    const photos = await checkPhotos(service, caller, command);
    if (!photos.ok) return { result: refused(photos.refusal) };
    // A valid request that the simulated upstream refuses, as `simulate:<code>` asks: nothing is charged.
    const simulated = simulatedProblem(command.prompt);
    if (simulated) {
      if ((simulated.body as { code: string }).code !== 'moderation_pending' || photos.fetched.length === 0) return { result: simulated };
      const assetIds = pendingAssets(service, caller, command, photos.fetched);
      await service.store.commit();
      return { result: { ...simulated, body: { ...(simulated.body as object), asset_ids: assetIds } } };
    }
    const price = priceOf(command.model, command.duration);
    if (service.credits.charge(caller.account, price)) return { result: service.insufficient(caller.account, price) };
    const video = createTask(service, caller, photos.command, price, photos.assetIdsUsed);
    return { result: ok(202, createdView(video, command.warnings, view(service))) };
  }, { ...(beforeCommit ? { beforeCommit } : {}) });
}

/** POST /videos/batch (spec 4.2): all or nothing, one charge for the total, a task and a webhook per item. */
export function createBatch(service: Service, caller: Caller, body: unknown, idempotencyKey?: string | string[]): Promise<Result> {
  return createOnce(service, caller, idempotencyKey, '/v1/videos/batch', body, async (): Promise<Created> => {
    const validated = validateBatch(body, { strict: service.strict, defaultAssetIds: caller.key.defaultAssetIds });
    if (!validated.ok) return { result: refused(validated.refusal) };
    const checked: Array<{ command: VideoCommand; price: number; assetIdsUsed: number[] | null; fetched: Fetched[] }> = [];
    for (const [index, command] of validated.value.entries()) {
      const photos = await checkPhotos(service, caller, command);
      if (!photos.ok) return { result: refused({ ...photos.refusal, detail: `items[${index}]: ${photos.refusal.detail}`, extra: { item_index: index } }) };
      checked.push({ command: photos.command, price: clipPrice(command.model, command.duration), assetIdsUsed: photos.assetIdsUsed, fetched: photos.fetched });
    }
    for (const [index, { command, fetched }] of checked.entries()) {
      const simulated = simulatedProblem(command.prompt, index);
      if (!simulated) continue;
      if ((simulated.body as { code: string }).code !== 'moderation_pending' || fetched.length === 0) return { result: simulated };
      const assetIds = pendingAssets(service, caller, command, fetched);
      await service.store.commit();
      return { result: { ...simulated, body: { ...(simulated.body as object), asset_ids: assetIds } } };
    }
    const total = checked.reduce((sum, item) => sum + item.price, 0);
    if (service.credits.charge(caller.account, total)) return { result: service.insufficient(caller.account, total) };
    const batchId = `batch_${service.clock.now().toString(36)}${randomBytes(3).toString('hex')}`;
    const videos = checked.map(({ command, price, assetIdsUsed }) => createTask(service, caller, command, price, assetIdsUsed, { batchId }));
    const ctx = view(service);
    return {
      result: ok(207, {
        batch_id: batchId,
        total_credits_used: total,
        items_count: videos.length,
        created_at: new Date(videos[0]!.createdAt).toISOString(),
        items: videos.map((video, index) => batchItemView(video, index, ctx)),
      }),
    };
  });
}

/** The caller's task `id` (a path segment), or the 404 of spec 4.4: unknown ids and other accounts' look the same. */
function own(service: Service, caller: Caller, id: string): Video | Result {
  const video = /^[1-9]\d{0,15}$/.test(id) ? service.videos.get(Number(id)) : undefined;
  return video && video.accountId === caller.account.id ? video : fail('not_found', { detail: `No video ${id}.` });
}

const isResult = (value: Video | Result): value is Result => 'status' in value && 'body' in value;

/** GET /videos/{id} (spec 4.4): fresh signed links on every call. */
export function getVideo(service: Service, caller: Caller, id: string): Result {
  const video = own(service, caller, id);
  return isResult(video) ? video : ok(200, videoView(video, view(service)));
}

/** GET /videos (spec 4.3): newest first, `limit` 1-100 (20), `offset` >= 0, `status`. */
export function listVideos(service: Service, caller: Caller, query: Record<string, unknown>): Result {
  const limit = integer(query.limit, 20, 1, 100);
  const offset = integer(query.offset, 0, 0, Number.MAX_SAFE_INTEGER);
  if (limit === null) return fail('invalid_parameter', { detail: 'limit is an integer from 1 to 100.' });
  if (offset === null) return fail('invalid_parameter', { detail: 'offset is an integer >= 0.' });
  const status = query.status;
  if (status !== undefined && !(VIDEO_STATUSES as readonly unknown[]).includes(status)) {
    return fail('invalid_parameter', { detail: `status is one of ${VIDEO_STATUSES.join(', ')}.`, extra: { allowed_values: VIDEO_STATUSES } });
  }
  const mine = [...service.store.table('video').values()].filter((video) => video.accountId === caller.account.id && (status === undefined || video.status === status));
  mine.sort((a, b) => b.id - a.id);
  const ctx = view(service);
  return ok(200, { data: mine.slice(offset, offset + limit).map((video) => videoView(video, ctx)), total: mine.length, limit, offset });
}

/** DELETE /videos/{id} (spec 4.5). */
export async function deleteVideo(service: Service, caller: Caller, id: string): Promise<Result> {
  const video = own(service, caller, id);
  if (isResult(video)) return video;
  const outcome = service.videos.remove(video);
  if (outcome === 'already_rendering') return fail('already_rendering', { detail: `Video ${video.id} is already rendering; it will finish and be charged.` });
  await service.store.commit();
  return ok(200, { success: true, action: outcome.action, id: video.id, credits_refunded: outcome.refunded });
}

/** POST /videos/{id}/retry (spec 3.1, 4.6): a new task from the original's parameters, at the API price. */
export async function retryVideo(service: Service, caller: Caller, id: string): Promise<Result> {
  const original = own(service, caller, id);
  if (isResult(original)) return original;
  // External photos were moderated for the first request only; the caller's character photos are trusted assets.
  const external = (url: string) => !url.startsWith('asset://') && !characterAsset(service, caller.account.id, url);
  const refusal = retryRefusal(original, service.retrying.has(original.id), external);
  if (refusal) return refused(refusal);
  const gone = (original.assetIdsUsed ?? []).find((assetId) => {
    const asset = service.assets.get(caller.account.id, assetId);
    return !asset || !service.assets.usable(asset);
  });
  if (gone !== undefined) return fail('invalid_asset_id', { detail: `Task ${original.id} used asset ${gone}, which is gone or no longer trusted; submit a new request.` });
  service.retrying.add(original.id);
  try {
    const price = clipPrice(original.model, original.duration);
    if (service.credits.charge(caller.account, price)) return service.insufficient(caller.account, price);
    caller.account.usage.videosCreated++;
    const retry = service.videos.create({
      accountId: caller.account.id, keyId: original.keyId, prompt: original.prompt, model: original.model, duration: original.duration,
      ratio: original.ratio, resolution: original.resolution, imageUrls: original.imageUrls, assetIdsUsed: original.assetIdsUsed,
      assetSource: original.assetSource, subjectConsent: original.subjectConsent, callbackUrl: original.callbackUrl, charged: price,
      retryOf: original.id, batchId: null, sticky: original.sticky, outcome: retryOutcome(original),
    });
    service.videos.markRetried(original, retry);
    // A failed write throws: the request's unit takes the charge, the retry and the mark back (503, issue 20 item 9).
    await service.store.commit();
    return ok(202, retryView(retry, view(service)));
  } finally {
    service.retrying.delete(original.id);
  }
}

/** GET /account (spec 4.16): balance and API usage (the fields are not shown by the spec; these are ours). */
export function getAccount(service: Service, caller: Caller): Result {
  const { account } = caller;
  const videos = [...service.store.table('video').values()].filter((video) => video.accountId === account.id);
  return ok(200, {
    id: account.id,
    object: 'account',
    balance: account.balance,
    currency: 'credits',
    topped_up: account.toppedUp,
    keys: service.accounts.keysOf(account.id).filter((key) => key.revokedAt === null).length,
    api_usage: {
      requests: account.usage.requests,
      credits_spent: account.usage.creditsSpent,
      credits_refunded: account.usage.creditsRefunded,
      videos_created: account.usage.videosCreated,
      videos_in_progress: videos.filter((video) => video.status === 'pending' || video.status === 'generating').length,
      credits_used: videos.reduce((sum, video) => sum + VideoLifecycle.creditsUsed(video), 0),
    },
  });
}

/** A query integer within bounds, its default when absent, or `null` when it is not one. */
function integer(value: unknown, fallback: number, min: number, max: number): number | null {
  if (value === undefined || value === '') return fallback;
  if (typeof value !== 'string' || !/^\d{1,16}$/.test(value)) return null;
  const number = Number(value);
  return number >= min && number <= max ? number : null;
}

