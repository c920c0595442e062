import * as z from 'zod';
import { ASSISTANT_TEXT, EFFECTS, effectPrompt, effectView, findEffect, type ToolCode } from '../contract/assistant.js';
import { IdempotencyKey, type SubjectConsent } from '../contract/common.js';
import { LIMITS } from '../contract/limits.js';
import { assistantClipPrice, DEFAULT_DURATION } from '../contract/pricing.js';
import { rule } from '../contract/problems.js';
import { MAX_CLIP_IMAGES, VideoFields, VideoListFields, VideoRequest } from '../contract/videos.js';
import type { ImageItem } from '../resources/images/job.js';
import { imageFileUrl } from '../resources/images/views.js';
import { refuse, type ToolAnswer } from './answers.js';
import type { Made } from './spending.js';
import { contractInput, parseInput, toToolResult, tool, valueResult, type ToolContext, type ToolDefinition } from './tool-runner.js';
import { MAX_TOOL_WAIT_SECONDS, waitForClip } from './wait.js';

/** The spending tools' `max_credits`: the most one call may spend (spec 5.7: required, refused rather than exceeded). */
export const maxCredits = rule(z.int().min(0), { code: 'invalid_parameter', detail: () => 'max_credits is a whole number of credits >= 0.' })
  .meta({ description: 'The most credits this call may spend. Required: the call is refused (nothing charged) if it costs more. Tell the person the price first.' });
/** The spending tools' `idempotency_key`: the rules of /v1's Idempotency-Key, from the contract. */
export const idempotencyKey = IdempotencyKey.optional().meta({ description: `Optional. 1-${LIMITS.idempotencyKeyChars} printable ASCII characters. A call of this tool with the same key returns the first result and is never charged twice.` });
const pictureIds = (what: string) =>
  rule(z.array(z.int().min(1)).max(MAX_CLIP_IMAGES), { code: what === 'photo_ids' ? 'invalid_asset_id' : 'invalid_parameter', when: { too_big: 'too_many_images' }, detail: ({ issue, where }) => (issue.code === 'too_big' ? `At most ${MAX_CLIP_IMAGES} pictures per clip.` : `${where}: ids are integers >= 1.`) }).optional();
const clipId = rule(z.int().min(1), { code: 'invalid_parameter', detail: () => 'clip_id is the integer id create_clip returned.' }).meta({ description: 'The clip id returned by create_clip or create_clip_from_effect.' });
const waitSeconds = rule(z.int().min(0).max(MAX_TOOL_WAIT_SECONDS), { code: 'invalid_parameter', detail: () => `wait_seconds is an integer from 0 to ${MAX_TOOL_WAIT_SECONDS}.` }).optional().meta({ description: `Default ${MAX_TOOL_WAIT_SECONDS}; 0 returns at once.` });

/** The arguments both clip tools take: the pictures, the webhook (the contract's callback_url), and the spending guard rails. */
const PICTURES_AND_SPENDING = {
  photo_ids: pictureIds('photo_ids').meta({ description: `asset_ids of the person's photos that are ready (from get_photo or list_photos; start_photo_upload asks for one), at most ${MAX_CLIP_IMAGES} together with image_ids.` }),
  image_ids: pictureIds('image_ids').meta({ description: `Ids of images made by create_image (the \`id\` of an item of its \`images\`), at most ${MAX_CLIP_IMAGES}, used as the clip's reference pictures.` }),
  callback_url: VideoFields.shape.callback_url,
  max_credits: maxCredits,
  idempotency_key: idempotencyKey,
};

/** create_clip's arguments: the clip fields of POST /v1/videos, picked from the contract, and the assistant's own. */
const CreateClip = z.object({ ...VideoFields.pick({ prompt: true, model: true, duration: true, ratio: true }).shape, ...PICTURES_AND_SPENDING });
const CreateClipFromEffect = z.object({
  effect_id: rule(z.string().max(64), { code: 'invalid_parameter' }).meta({ description: 'An effect id from list_effects.' }),
  subject: rule(z.string().max(300), { code: 'invalid_parameter' }).optional().meta({ description: 'What the clip is of, in a few words ("a red bicycle").' }),
  ...PICTURES_AND_SPENDING,
});
const GetClip = z.object({ clip_id: clipId, wait_seconds: waitSeconds });
const CancelClip = z.object({ clip_id: clipId });

const Clip = z.looseObject({ id: z.number(), status: z.string(), credits_used: z.number().optional() });

/**
 * The clip tools. Each creates, reads or cancels through the same commands as `/v1/videos`, on the same
 * schemas, so a clip made here is in GET /v1/videos, sends its webhook, and is refused for the same reasons
 * with the same codes.
 */
export const CLIP_TOOLS: readonly ToolDefinition[] = [
  tool(
    'list_effects',
    {
      title: 'List clip effects',
      description: 'Lists the ready-made clip effects (id, name, what it does, model, duration, price in credits). Use an id with create_clip_from_effect.',
      inputSchema: z.object({}),
      outputSchema: z.object({ effects: z.array(z.looseObject({ id: z.string(), name: z.string(), description: z.string(), model: z.string(), duration: z.number(), credits: z.number() })) }),
      annotations: { readOnlyHint: true },
    },
    async () => toToolResult({ ok: true, value: { effects: EFFECTS.map(effectView) } }),
  ),

  tool(
    'create_clip_from_effect',
    {
      title: 'Create a clip from an effect',
      description: 'Makes a clip with one of the effects of list_effects, optionally of a subject and from the person\'s photos (photo_ids) or images made by create_image. Spends credits (the effect\'s price); returns at once with the clip id: call get_clip to wait for it.',
      inputSchema: contractInput(CreateClipFromEffect),
      outputSchema: Clip,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    async (ctx, raw) => {
      const args = parseInput(CreateClipFromEffect, raw);
      const effect = findEffect(args.effect_id);
      if (!effect) return toToolResult(refuse('unknown_effect', `No effect ${JSON.stringify(args.effect_id)}; call list_effects for the ids.`));
      return toToolResult(await createClip(ctx, 'create_clip_from_effect', args, { prompt: effectPrompt(effect, args.subject), model: effect.model, duration: effect.duration }));
    },
  ),

  tool(
    'create_clip',
    {
      title: 'Create a clip',
      description: `Makes a video clip from a prompt and/or pictures: the person's photos (photo_ids) and images made by create_image (image_ids). Price: credits per second of the model (${ASSISTANT_TEXT.clipPerSecond}) times the duration (default ${DEFAULT_DURATION} s). Returns at once with the clip id: call get_clip to wait for it.`,
      inputSchema: contractInput(CreateClip),
      outputSchema: Clip,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    async (ctx, raw) => {
      const { prompt, model, duration, ratio, ...args } = parseInput(CreateClip, raw);
      return toToolResult(await createClip(ctx, 'create_clip', { prompt, model, duration, ratio, ...args }, { prompt: prompt ?? '', model, duration, ratio }));
    },
  ),

  tool(
    'get_clip',
    {
      title: 'Get a clip',
      description: `Returns a clip, waiting up to ${MAX_TOOL_WAIT_SECONDS} s for it to end (done, error or cancelled) first. When done, video_url is a signed link to the file. If it is still pending or generating, call again.`,
      inputSchema: contractInput(GetClip),
      outputSchema: Clip,
      annotations: { readOnlyHint: true },
    },
    async (ctx, raw, extra) => {
      const args = parseInput(GetClip, raw);
      const video = ctx.parts.videos.own(ctx.caller, args.clip_id);
      await waitForClip(ctx.parts, video, (args.wait_seconds ?? MAX_TOOL_WAIT_SECONDS) * 1000, signalOf(extra));
      return valueResult(ctx.parts.videos.get(ctx.caller, args.clip_id));
    },
  ),

  tool(
    'list_clips',
    {
      title: 'List clips',
      description: 'Lists the account\'s clips, newest first (those made through the API too).',
      inputSchema: contractInput(VideoListFields),
      outputSchema: z.looseObject({ data: z.array(Clip), total: z.number() }),
      annotations: { readOnlyHint: true },
    },
    (ctx, raw) => {
      const { limit = LIMITS.videoPage.default, offset = 0, status } = parseInput(VideoListFields, raw);
      return valueResult(ctx.parts.videos.list(ctx.caller, { limit, offset, status }));
    },
  ),

  tool(
    'cancel_clip',
    {
      title: 'Cancel a clip',
      description: 'Cancels a clip that has not started rendering, and refunds its credits. A rendering clip cannot be cancelled (it finishes and is charged); a finished one is left as it is.',
      inputSchema: contractInput(CancelClip),
      outputSchema: z.looseObject({ id: z.number(), action: z.literal('cancelled'), credits_refunded: z.number() }),
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async (ctx, raw) => {
      const args = parseInput(CancelClip, raw);
      const { status } = ctx.parts.videos.own(ctx.caller, args.clip_id);
      if (status !== 'pending' && status !== 'generating') return toToolResult(refuse('already_ended', `Clip ${args.clip_id} has already ended (${status}); nothing to cancel.`));
      // As DELETE /v1/videos/{id}: one unit, saved before the answer (a failed write is thrown: the answer step's 503).
      return valueResult(await ctx.parts.store.unit(async () => ctx.parts.videos.remove(ctx.caller, args.clip_id)));
    },
  ),
];

/** The request's abort signal, when the SDK's context carries one. */
export function signalOf(extra: unknown): AbortSignal | undefined {
  const candidate = extra as { signal?: unknown; mcpReq?: { signal?: unknown } } | undefined;
  const signal = candidate?.mcpReq?.signal ?? candidate?.signal;
  return signal instanceof AbortSignal ? signal : undefined;
}

interface ClipPlan {
  prompt: string;
  model?: string | null | undefined;
  duration?: number | null | undefined;
  ratio?: string | null | undefined;
}

type ClipArgs = Record<string, unknown> & { photo_ids?: number[] | undefined; image_ids?: number[] | undefined; callback_url?: string | null | undefined; max_credits: number; idempotency_key?: string | undefined };

/**
 * Charges the base price (spec 5.7) under the spending rules, through the same contract and command as
 * POST /v1/videos: the clip's body is checked by the contract's own rules (the model's durations, consent…).
 */
async function createClip(ctx: ToolContext, tool: string, args: ClipArgs, plan: ClipPlan): Promise<ToolAnswer> {
  const { parts, caller } = ctx;
  const photos = readyPhotos(ctx, args.photo_ids ?? []);
  if (!photos.ok) return photos;
  const imageUrls: string[] = photos.value.uris;
  for (const id of args.image_ids ?? []) {
    const image = madeImage(ctx, id);
    if (!image) return refuse('invalid_image_id', `Image ${id} is not one of this account's images; use the id of an item of create_image's images.`);
    // Spec 2.7: an image edited from a photo of a real person "stays an image".
    if (image.animate === 'no') return refuse('image_not_animatable', `Image ${id} was edited from a photo of a real person and stays an image (animate: no); use another image, or the person's photo through start_photo_upload.`);
    imageUrls.push(imageFileUrl(parts.origin, image).url);
  }
  // Images the service made show no real person (spec 5: no_real_person).
  const consents = [...photos.value.consents, ...((args.image_ids ?? []).length > 0 ? ['no_real_person' as const] : [])];
  const request = parseInput(VideoRequest, {
    prompt: plan.prompt, model: plan.model, duration: plan.duration, ratio: plan.ratio, callback_url: args.callback_url,
    // Consent is recorded with each request (spec 5): the one the pictures were given with.
    ...(imageUrls.length > 0 ? { image_urls: imageUrls, subject_consent: requestConsent(consents) } : {}),
  });
  // The key's default assets are for /v1 clients: an assistant uses only the photos it names, each uploaded with consent.
  const command = parts.videos.command(caller, request, { defaultAssets: false });
  const price = assistantClipPrice(command.model, command.duration);
  const { max_credits: maxCreditsValue, idempotency_key: key, ...rest } = args;
  return ctx.spending.spend(
    { assistant: ctx.assistant, account: caller.account },
    { tool, args: rest, idempotencyKey: key, kind: 'clip', price, maxCredits: maxCreditsValue },
    async (): Promise<Made> => {
      // Priced once, above; the command charges that price, so the check against max_credits and the charge agree.
      const made = await parts.videos.create(caller, command, { price: () => price });
      return { id: made.id, value: made };
    },
  );
}

/**
 * The `asset://` URIs of the caller's photos and the consent each was given with (spec 5: asset:// only for
 * the caller's own moderated assets), or a refusal saying what to do about the first that is not ready.
 */
function readyPhotos(ctx: ToolContext, ids: number[]): Extract<ToolAnswer, { ok: false }> | { ok: true; value: { uris: string[]; consents: SubjectConsent[] } } {
  const { parts, caller } = ctx;
  const no = (code: ToolCode, message: string) => refuse(code, message) as Extract<ToolAnswer, { ok: false }>;
  const uris: string[] = [];
  const consents: SubjectConsent[] = [];
  for (const id of ids) {
    const asset = parts.state.assets.get(caller.account.id, id);
    if (!asset) return no('invalid_photo_id', `Photo ${id} is not one of this account's photos; use an asset_id from get_photo or list_photos.`);
    if (asset.status === 'rejected') return no('photo_rejected', `Photo ${id} failed moderation and cannot be used; ask for another with start_photo_upload.`);
    if (!parts.state.assets.usable(asset)) return no('photo_not_ready', `Photo ${id} is still being moderated; call get_photo until its status is ready.`);
    const consent = parts.photoUploads.consentOf(asset);
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

/** One of the caller's made images, by its id: the jobs' index by image, so its cost is the one job that holds it. */
function madeImage(ctx: ToolContext, imageId: number): ImageItem | undefined {
  return ctx.parts.state.images.image(ctx.caller.account.id, imageId);
}
