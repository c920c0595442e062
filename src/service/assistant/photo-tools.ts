import * as z from 'zod';
import { LIMITS } from '../contract/limits.js';
import type { Asset } from '../resources/assets/assets.js';
import { assetUri } from '../resources/assets/views.js';
import { PHOTO_UPLOAD_PATH, PHOTO_UPLOAD_TTL_MS, type PhotoUpload } from '../resources/photos/uploads.js';
import { signalOf } from './clip-tools.js';
import { refuse, type ToolAnswer } from './answers.js';
import { toToolResult, tool, valueResult, type ToolContext, type ToolDefinition } from './tool-runner.js';
import { MAX_TOOL_WAIT_SECONDS } from './wait.js';

/**
 * Where a photo stands for the assistant: the link not used yet (`waiting_for_upload`) or no longer
 * usable (`expired`), then the asset's moderation (`pending`, `ready`, `rejected`).
 */
export type PhotoState = 'waiting_for_upload' | 'expired' | 'pending' | 'ready' | 'rejected';

const Photo = z.looseObject({
  photo_id: z.union([z.string(), z.number()]),
  upload_id: z.string().nullable(),
  uploaded: z.boolean(),
  status: z.enum(['waiting_for_upload', 'expired', 'pending', 'ready', 'rejected']),
  asset_id: z.number().nullable(),
  asset_uri: z.string().nullable(),
  subject_consent: z.string().nullable(),
  next_step: z.string(),
});

const PhotoItem = z.looseObject({ asset_id: z.number(), asset_uri: z.string().nullable(), name: z.string(), subject_consent: z.string().nullable(), created_at: z.string().nullable() });

/** start_photo_upload, get_photo and list_photos (spec 5.7: "assistants cannot send photos"). None spends credits. */
export const PHOTO_TOOLS: readonly ToolDefinition[] = [
  tool(
    'start_photo_upload',
    {
      title: 'Start a photo upload',
      description:
        'Assistants cannot send photos: this makes a link to a page where the person uploads one and says who is in it. ' +
        'Give the upload_url to the person and ask them to open it, then call get_photo with the upload_id: it waits for the upload and its moderation. ' +
        'The link works once, for one hour. Free.',
      inputSchema: z.object({}),
      outputSchema: z.object({ upload_id: z.string(), upload_url: z.string(), expires_at: z.string(), instructions: z.string() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (ctx) => {
      const { upload, token } = await ctx.parts.store.unit(async () => ctx.parts.photoUploads.create({ accountId: ctx.caller.account.id, keyId: ctx.caller.key.id }));
      const minutes = PHOTO_UPLOAD_TTL_MS / 60_000;
      return valueResult({
        upload_id: upload.id,
        upload_url: `${ctx.parts.origin}${PHOTO_UPLOAD_PATH}/${token}`,
        expires_at: new Date(upload.expiresAt).toISOString(),
        instructions: `Give this link to the person: they open it, pick a photo and say who is in it. It works once, for ${minutes} minutes. Then call get_photo with upload_id "${upload.id}".`,
      });
    },
  ),

  tool(
    'get_photo',
    {
      title: 'Get a photo',
      description:
        `Whether the person has uploaded the photo of an upload link yet, then its moderation: waits up to ${MAX_TOOL_WAIT_SECONDS} s (wait_seconds) for it to be ready, rejected or expired. ` +
        'Once status is ready, give its asset_id to create_clip or create_clip_from_effect as photo_ids. Also takes the asset id of a photo from list_photos.',
      inputSchema: z.object({
        photo_id: z.union([z.string().min(1).max(64), z.number().int().positive()]).describe('The upload_id from start_photo_upload ("upl_…"), or a photo\'s asset_id.'),
        wait_seconds: z.number().int().min(0).max(MAX_TOOL_WAIT_SECONDS).optional().describe(`Default ${MAX_TOOL_WAIT_SECONDS}; 0 returns at once.`),
      }),
      outputSchema: Photo,
      annotations: { readOnlyHint: true },
    },
    async (ctx, args: { photo_id: string | number; wait_seconds?: number | undefined }, extra) => {
      const first = findPhoto(ctx, args.photo_id);
      if (!first.ok) return toToolResult(first);
      const waitMs = (args.wait_seconds ?? MAX_TOOL_WAIT_SECONDS) * 1000;
      await waitForPhoto(ctx, args.photo_id, waitMs, signalOf(extra));
      return toToolResult(findPhoto(ctx, args.photo_id));
    },
  ),

  tool(
    'list_photos',
    {
      title: 'List photos',
      description: 'The account\'s photos that passed moderation and can be used now, newest first: give an asset_id to create_clip as photo_ids.',
      inputSchema: z.object({
        limit: z.number().int().min(LIMITS.assetPage.min).max(LIMITS.assetPage.max).optional().describe('Default 20.'),
        offset: z.number().int().min(0).optional(),
      }),
      outputSchema: z.looseObject({ data: z.array(PhotoItem), total: z.number(), limit: z.number(), offset: z.number() }),
      annotations: { readOnlyHint: true },
    },
    async (ctx, args: { limit?: number | undefined; offset?: number | undefined }) => {
      const page = ctx.parts.assets.list(ctx.caller, { limit: args.limit ?? 20, offset: args.offset ?? 0 });
      const data = page.data.map(({ id }) => {
        const asset = ctx.parts.state.assets.get(ctx.caller.account.id, id)!;
        return { asset_id: asset.id, asset_uri: assetUri(asset), name: asset.name, subject_consent: ctx.parts.photoUploads.consentOf(asset), created_at: new Date(asset.createdAt).toISOString() };
      });
      return toToolResult({ ok: true, value: { data, total: page.total, limit: page.limit, offset: page.offset } });
    },
  ),
];

/** The caller's upload or asset named by `photoId`, as get_photo answers it; not_found for anything else. */
function findPhoto(ctx: ToolContext, photoId: string | number): ToolAnswer {
  const { parts, caller } = ctx;
  const asNumber = typeof photoId === 'number' ? photoId : /^[1-9]\d{0,15}$/.test(photoId) ? Number(photoId) : null;
  if (asNumber !== null) {
    const asset = parts.state.assets.get(caller.account.id, asNumber);
    if (!asset) return refuse('not_found', `No photo ${photoId}: give the upload_id of start_photo_upload or an asset_id of list_photos.`);
    return { ok: true, value: photoView(ctx, photoId, parts.photoUploads.byAsset(caller.account.id, asset.id) ?? null, asset) };
  }
  const upload = parts.photoUploads.get(caller.account.id, String(photoId));
  if (!upload) return refuse('not_found', `No photo upload ${JSON.stringify(photoId)}: give the upload_id of start_photo_upload or an asset_id of list_photos.`);
  const asset = upload.assetId === null ? null : (parts.state.assets.get(caller.account.id, upload.assetId) ?? null);
  if (upload.assetId !== null && !asset) return refuse('not_found', `The photo of upload ${upload.id} was deleted. Call start_photo_upload for a new one.`);
  return { ok: true, value: photoView(ctx, photoId, upload, asset) };
}

function photoView(ctx: ToolContext, photoId: string | number, upload: PhotoUpload | null, asset: Asset | null): Record<string, unknown> {
  const state = photoState(ctx, upload, asset);
  return {
    photo_id: photoId,
    upload_id: upload?.id ?? null,
    uploaded: asset !== null,
    status: state,
    asset_id: asset?.id ?? null,
    asset_uri: asset && state === 'ready' ? assetUri(asset) : null,
    subject_consent: asset ? ctx.parts.photoUploads.consentOf(asset) : null,
    ...(asset?.status === 'rejected' ? { reason_code: asset.reasonCode } : {}),
    ...(upload && !asset ? { expires_at: new Date(upload.expiresAt).toISOString() } : {}),
    next_step: NEXT_STEPS[state],
    ...(asset ? { name: asset.name, created_at: new Date(asset.createdAt).toISOString() } : {}),
  };
}

const NEXT_STEPS: Record<PhotoState, string> = {
  waiting_for_upload: 'The person has not uploaded the photo yet. Make sure they have the upload_url, then call get_photo again.',
  expired: 'The link expired before a photo was uploaded. Call start_photo_upload for a new link.',
  pending: `The photo was uploaded and is being moderated (${LIMITS.assetModerationMs.map((ms) => ms / 1000).join('-')} s). Call get_photo again.`,
  ready: 'Ready: give asset_id in photo_ids to create_clip or create_clip_from_effect.',
  rejected: 'The photo failed moderation and cannot be used. Ask the person for another one with start_photo_upload.',
};

function photoState({ parts }: ToolContext, upload: PhotoUpload | null, asset: Asset | null): PhotoState {
  if (!asset) return upload && parts.photoUploads.expired(upload) ? 'expired' : 'waiting_for_upload';
  if (asset.status === 'rejected') return 'rejected';
  return parts.state.assets.usable(asset) ? 'ready' : 'pending';
}

const settled = (state: unknown) => state === 'ready' || state === 'rejected' || state === 'expired';

/**
 * Waits on the service's clock until the photo is ready, rejected or expired, woken by an upload on a link
 * and by the end of a moderation (never by polling), or until `ms` or `signal`.
 */
function waitForPhoto(ctx: ToolContext, photoId: string | number, ms: number, signal: AbortSignal | undefined): Promise<void> {
  const { parts } = ctx;
  const now = () => {
    const found = findPhoto(ctx, photoId);
    return found.ok ? found.value : null;
  };
  const first = now();
  if (!first || settled(first.status) || ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timers: unknown[] = [];
    const done = () => {
      parts.photoUploads.off('uploaded', check);
      parts.state.assets.off('moderated', check);
      signal?.removeEventListener('abort', done);
      for (const timer of timers) parts.clock.clearTimeout(timer);
      resolve();
    };
    const check = () => {
      const current = now();
      if (!current || settled(current.status)) done();
    };
    parts.photoUploads.on('uploaded', check);
    parts.state.assets.on('moderated', check);
    signal?.addEventListener('abort', done, { once: true });
    timers.push(parts.clock.setTimeout(done, ms));
    // A link that expires during the wait ends it too.
    const expiresAt = typeof first.expires_at === 'string' ? Date.parse(first.expires_at) : null;
    if (expiresAt !== null && expiresAt - parts.clock.now() < ms) timers.push(parts.clock.setTimeout(check, Math.max(0, expiresAt - parts.clock.now())));
  });
}
