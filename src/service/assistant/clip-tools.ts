import type { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { ImageItem } from '../resources/images/jobs.js';
import { imageFileUrl } from '../resources/images/views.js';
import { assistantClipPrice, DEFAULT_DURATION, MODEL_SPECS, VIDEO_MODELS, type VideoModel } from '../contract/pricing.js';
import { RATIOS, type SubjectConsent } from '../videos/validate.js';
import { createVideo, deleteVideo, getVideo, listVideos } from '../videos/operations.js';
import { fromResult, toToolResult, type ToolContext } from './context.js';
import { EFFECTS, effectPrompt, effectView, findEffect } from './effects.js';
import { refuse, type Made, type ToolAnswer } from './spending.js';
import { MAX_TOOL_WAIT_SECONDS, waitForClip } from './wait.js';

const maxCredits = z.number().int().min(0).describe('The most credits this call may spend. Required: the call is refused (nothing charged) if the clip costs more. Tell the person the price first.');
/** The spending tools' `idempotency_key`: the rules of /v1's Idempotency-Key. */
export const idempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'idempotency_key is 1-255 printable ASCII characters (as Idempotency-Key on /v1).')
  .optional()
  .describe('Optional. 1-255 printable ASCII characters. A call of this tool with the same key returns the first result and is never charged twice.');
const imageIds = z.array(z.number().int().positive()).max(5).optional().describe('Ids of images made by create_image (the `id` of an item of its `images`), at most 5, used as the clip\'s reference pictures.');
const photoIds = z.array(z.number().int().positive()).max(5).optional().describe('asset_ids of the person\'s photos that are ready (from get_photo or list_photos; start_photo_upload asks for one), at most 5 together with image_ids, used as the clip\'s reference pictures.');
const callbackUrl = z.string().max(2048).optional().describe('Optional. A URL that receives the clip\'s signed webhook when it ends, as with POST /v1/videos.');
const clipId = z.number().int().positive().describe('The clip id returned by create_clip or create_clip_from_effect.');

const Clip = z.looseObject({ id: z.number(), status: z.string(), credits_used: z.number().optional() });

/**
 * The clip tools. Each creates, reads or cancels through the same operations as `/v1/videos`, so a clip
 * made here is in GET /v1/videos and sends its webhook.
 */
/** The arguments both clip tools take: the pictures, the webhook, and the spending guard rails. */
const PICTURES_AND_SPENDING = { photo_ids: photoIds, image_ids: imageIds, callback_url: callbackUrl, max_credits: maxCredits, idempotency_key: idempotencyKey };

export function registerClipTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'list_effects',
    {
      title: 'List clip effects',
      description: 'Lists the ready-made clip effects (id, name, what it does, model, duration, price in credits). Use an id with create_clip_from_effect.',
      inputSchema: z.object({}),
      outputSchema: z.object({ effects: z.array(z.looseObject({ id: z.string(), name: z.string(), description: z.string(), model: z.string(), duration: z.number(), credits: z.number() })) }),
      annotations: { readOnlyHint: true },
    },
    async () => toToolResult({ ok: true, value: { effects: EFFECTS.map(effectView) } }),
  );

  server.registerTool(
    'create_clip_from_effect',
    {
      title: 'Create a clip from an effect',
      description: 'Makes a clip with one of the effects of list_effects, optionally of a subject and from the person\'s photos (photo_ids) or images made by create_image. Spends credits (the effect\'s price); returns at once with the clip id: call get_clip to wait for it.',
      inputSchema: z.object({
        effect_id: z.string().describe('An effect id from list_effects.'),
        subject: z.string().max(300).optional().describe('What the clip is of, in a few words ("a red bicycle").'),
        ...PICTURES_AND_SPENDING,
      }),
      outputSchema: Clip,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    async (args) => {
      const effect = findEffect(args.effect_id);
      if (!effect) return toToolResult(refuse('unknown_effect', `No effect ${JSON.stringify(args.effect_id)}; call list_effects for the ids.`));
      const prompt = effectPrompt(effect, args.subject);
      return toToolResult(await createClip(ctx, 'create_clip_from_effect', args, { prompt, model: effect.model, duration: effect.duration, photoIds: args.photo_ids, imageIds: args.image_ids, callbackUrl: args.callback_url }));
    },
  );

  server.registerTool(
    'create_clip',
    {
      title: 'Create a clip',
      description: `Makes a video clip from a prompt and/or pictures: the person's photos (photo_ids) and images made by create_image (image_ids). Price: credits per second of the model (standard 2, standard-hd 4, standard-fullhd 10, cinema 3, cinema-hd 6, cinema-fullhd 15) times the duration (default ${DEFAULT_DURATION} s). Returns at once with the clip id: call get_clip to wait for it.`,
      inputSchema: z.object({
        prompt: z.string().max(2000).optional().describe('What happens in the clip.'),
        model: z.enum(VIDEO_MODELS).optional().describe('Default standard (480p).'),
        duration: z.number().int().min(4).max(30).optional().describe('Seconds: 4-15 for standard models, 4-30 for cinema models. Default 5.'),
        ratio: z.enum(RATIOS).optional().describe('Default 16:9.'),
        ...PICTURES_AND_SPENDING,
      }),
      outputSchema: Clip,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    async (args) => {
      if ((args.prompt ?? '').trim() === '' && (args.image_ids ?? []).length === 0 && (args.photo_ids ?? []).length === 0) {
        return toToolResult(refuse('missing_input', 'Give a prompt, photo_ids or image_ids, or a prompt with pictures.'));
      }
      const model = args.model ?? 'standard';
      const duration = args.duration ?? DEFAULT_DURATION;
      const spec = MODEL_SPECS[model];
      if (duration < spec.minDuration || duration > spec.maxDuration) {
        return toToolResult(refuse('invalid_duration', `${model} makes clips of ${spec.minDuration}-${spec.maxDuration} seconds.`));
      }
      return toToolResult(await createClip(ctx, 'create_clip', args, { prompt: args.prompt ?? '', model, duration, photoIds: args.photo_ids, imageIds: args.image_ids, ratio: args.ratio, callbackUrl: args.callback_url }));
    },
  );

  server.registerTool(
    'get_clip',
    {
      title: 'Get a clip',
      description: `Returns a clip, waiting up to ${MAX_TOOL_WAIT_SECONDS} s for it to end (done, error or cancelled) first. When done, video_url is a signed link to the file. If it is still pending or generating, call again.`,
      inputSchema: z.object({ clip_id: clipId, wait_seconds: z.number().int().min(0).max(MAX_TOOL_WAIT_SECONDS).optional().describe(`Default ${MAX_TOOL_WAIT_SECONDS}; 0 returns at once.`) }),
      outputSchema: Clip,
      annotations: { readOnlyHint: true },
    },
    async (args, extra) => {
      const found = getVideo(ctx.service, ctx.caller, String(args.clip_id));
      if (found.status !== 200) return toToolResult(fromResult(found));
      const video = ctx.service.videos.get(args.clip_id)!;
      await waitForClip(ctx.service, video, (args.wait_seconds ?? MAX_TOOL_WAIT_SECONDS) * 1000, signalOf(extra));
      return toToolResult(fromResult(getVideo(ctx.service, ctx.caller, String(args.clip_id))));
    },
  );

  server.registerTool(
    'list_clips',
    {
      title: 'List clips',
      description: 'Lists the account\'s clips, newest first (those made through the API too).',
      inputSchema: z.object({
        status: z.enum(['pending', 'generating', 'done', 'error', 'cancelled']).optional(),
        limit: z.number().int().min(1).max(100).optional().describe('Default 20.'),
        offset: z.number().int().min(0).optional(),
      }),
      outputSchema: z.looseObject({ data: z.array(Clip), total: z.number() }),
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      const query = Object.fromEntries(Object.entries(args).filter(([, value]) => value !== undefined).map(([name, value]) => [name, String(value)]));
      return toToolResult(fromResult(listVideos(ctx.service, ctx.caller, query)));
    },
  );

  server.registerTool(
    'cancel_clip',
    {
      title: 'Cancel a clip',
      description: 'Cancels a clip that has not started rendering, and refunds its credits. A rendering clip cannot be cancelled (it finishes and is charged); a finished one is left as it is.',
      inputSchema: z.object({ clip_id: clipId }),
      outputSchema: z.looseObject({ id: z.number(), action: z.literal('cancelled'), credits_refunded: z.number() }),
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async (args) => {
      const found = getVideo(ctx.service, ctx.caller, String(args.clip_id));
      if (found.status !== 200) return toToolResult(fromResult(found));
      const status = ctx.service.videos.get(args.clip_id)!.status;
      if (status !== 'pending' && status !== 'generating') {
        return toToolResult(refuse('already_ended', `Clip ${args.clip_id} has already ended (${status}); nothing to cancel.`));
      }
      return toToolResult(fromResult(await deleteVideo(ctx.service, ctx.caller, String(args.clip_id))));
    },
  );
}

/** The request's abort signal, when the SDK's context carries one. */
export function signalOf(extra: unknown): AbortSignal | undefined {
  const candidate = (extra as { signal?: unknown; mcpReq?: { signal?: unknown } } | undefined);
  const signal = candidate?.mcpReq?.signal ?? candidate?.signal;
  return signal instanceof AbortSignal ? signal : undefined;
}

interface ClipPlan {
  prompt: string;
  model: VideoModel;
  duration: number;
  photoIds: number[] | undefined;
  imageIds: number[] | undefined;
  ratio?: string | undefined;
  callbackUrl?: string | undefined;
}

/** Charges the base price under the spending rules, through POST /v1/videos' own operation. */
async function createClip(ctx: ToolContext, tool: string, args: Record<string, unknown> & { max_credits: number; idempotency_key?: string | undefined }, plan: ClipPlan): Promise<ToolAnswer> {
  const photos = readyPhotos(ctx, plan.photoIds ?? []);
  if (!photos.ok) return photos;
  const imageUrls: string[] = photos.value.uris;
  for (const id of plan.imageIds ?? []) {
    const image = madeImage(ctx, id);
    if (!image) return refuse('invalid_image_id', `Image ${id} is not one of this account's images; use the id of an item of create_image's images.`);
    // Spec 2.7: an image edited from a photo of a real person "stays an image".
    if (image.animate === 'no') return refuse('image_not_animatable', `Image ${id} was edited from a photo of a real person and stays an image (animate: no); use another image, or the person's photo through start_photo_upload.`);
    imageUrls.push(imageFileUrl(ctx.service.origin, image).url);
  }
  // Images the service made show no real person (spec 5: no_real_person).
  const consents = [...photos.value.consents, ...((plan.imageIds ?? []).length > 0 ? ['no_real_person' as const] : [])];
  const price = assistantClipPrice(plan.model, plan.duration);
  const { max_credits: maxCreditsValue, idempotency_key: key, ...rest } = args;
  return ctx.spending.spend(
    { assistant: ctx.assistant, account: ctx.caller.account },
    { tool, args: rest, idempotencyKey: key, kind: 'clip', price, maxCredits: maxCreditsValue },
    async (beforeCommit): Promise<Made> => {
      const body = {
        prompt: plan.prompt,
        model: plan.model,
        duration: plan.duration,
        ...(plan.ratio ? { ratio: plan.ratio } : {}),
        ...(plan.callbackUrl ? { callback_url: plan.callbackUrl } : {}),
        // Consent is recorded with each request (spec 5): the one the pictures were given with.
        ...(imageUrls.length > 0 ? { image_urls: imageUrls, subject_consent: requestConsent(consents) } : {}),
      };
      // The key's default assets (PUT /settings/keys/{id}/default-assets) are for /v1 clients: an assistant
      // uses only the photos it names, each uploaded by the person with consent.
      const caller = { ...ctx.caller, key: { ...ctx.caller.key, defaultAssetIds: [] } };
      const answer = fromResult(await createVideo(ctx.service, caller, body, undefined, { price: assistantClipPrice, beforeCommit }));
      return answer.ok ? { ok: true, id: answer.value.id as number, value: answer.value } : answer;
    },
  );
}

/**
 * The `asset://` URIs of the caller's photos and the consent each was given with (spec 5: asset:// only for
 * the caller's own moderated assets), or a refusal saying what to do about the first that is not ready.
 */
function readyPhotos(ctx: ToolContext, ids: number[]): Extract<ToolAnswer, { ok: false }> | { ok: true; value: { uris: string[]; consents: SubjectConsent[] } } {
  const no = (code: string, message: string) => refuse(code, message) as Extract<ToolAnswer, { ok: false }>;
  const uris: string[] = [];
  const consents: SubjectConsent[] = [];
  for (const id of ids) {
    const asset = ctx.service.assets.get(ctx.caller.account.id, id);
    if (!asset) return no('invalid_photo_id', `Photo ${id} is not one of this account's photos; use an asset_id from get_photo or list_photos.`);
    if (asset.status === 'rejected') return no('photo_rejected', `Photo ${id} failed moderation and cannot be used; ask for another with start_photo_upload.`);
    if (!ctx.service.assets.usable(asset)) return no('photo_not_ready', `Photo ${id} is still being moderated; call get_photo until its status is ready.`);
    const consent = ctx.service.photoUploads.consentOf(asset);
    if (!consent) return no('consent_required', `Nobody said who is in photo ${id}; ask the person to upload it with start_photo_upload, where they say so.`);
    uris.push(`asset://${asset.id}`);
    consents.push(consent);
  }
  return { ok: true, value: { uris, consents } };
}

/**
 * The one subject_consent a clip request carries, from its pictures': the same value when they agree;
 * otherwise someone other than the account holder is in one, who agreed (`permission`), or the account
 * holder is (`self`), either of which says more than `no_real_person`.
 */
function requestConsent(consents: SubjectConsent[]): SubjectConsent {
  if (consents.includes('permission')) return 'permission';
  if (consents.includes('self')) return 'self';
  return 'no_real_person';
}

/** The file link of one of the caller's made images, by its id. */
function madeImage(ctx: ToolContext, imageId: number): ImageItem | undefined {
  for (const job of ctx.service.store.table('image_job').values()) {
    if (job.accountId !== ctx.caller.account.id || job.imagesDeleted) continue;
    const image = job.images.find((item) => item.id === imageId);
    if (image) return image;
  }
  return undefined;
}
