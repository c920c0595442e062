import { z } from 'zod';
import type { ProblemCode } from '../../protocol/problem.js';
import { Account, Pricing } from './account.js';
import { Asset, AssetList, AssetListQuery, AssetPath, AssetUpload, AssetUploadForm, DeleteAssetResponse } from './assets.js';
import { DeleteImageResponse, ImageJob, ImageJobList, ImageListQuery, ImagePath, ImageRequest, ImageWaitQuery } from './images.js';
import { MediaPath, MediaQuery } from './media.js';
import { LIMITS } from './limits.js';
import {
  ApiKeyList, AssistantList, AssistantPath, AssistantView, CreatedApiKey, DailyLimitRequest, DefaultAssetsRequest, DisconnectedAssistant, KeyPath, RevokedApiKey, RotatedSecret,
  ApiKeyView, TOP_UP_PAGE_PATH, TopUpRequest, TopUpResponse,
} from './settings.js';
import { SERVED_TEST_HELPER_ROUTES } from '../testing/contract/test-helper-routes.js';
import { BatchResponse, CreateVideoResponse, DeleteVideoResponse, RetryResponse, Video, VideoList } from './video-responses.js';
import { BatchRequest, VideoListQuery, VideoPath, VideoRequest } from './videos.js';

/**
 * Who may call a route: `key` is the bearer API key with every check of spec 4 (60 a minute, 402 below
 * 10 credits); `settings` is the key without the balance floor (the account settings and the test
 * helpers are how one tops up); `none` is public. The test helpers: `admin` is the admin
 * token only (`Authorization: Bearer <admin token>`, printed by `serve`; service-wide helpers: accounts,
 * reset, seed); `admin_or_key` is the admin token, which reaches every account, or an account's API key
 * without the balance floor, which reaches only that account's own entries and rules (the journal, fault
 * rules, webhook chaos). Both are bearer credentials: a wrong or missing one is 401, as for `key`.
 */
export type Auth = 'key' | 'settings' | 'admin' | 'admin_or_key' | 'none';

/** One response of a route: its schema (JSON), or the media types of a file. */
export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** A file: these media types, binary. */
  files?: readonly string[];
  /** Response headers beyond the rate-limit ones. */
  headers?: readonly ('Idempotent-Replayed' | 'Location' | 'Content-Range' | 'Accept-Ranges' | 'Content-Disposition')[];
}

/** A route of the API, as data: the router, the OpenAPI document and the docs' endpoint table are made from it. */
export interface RouteSpec {
  operationId: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** An OpenAPI path template: `/v1/videos/{id}`. */
  path: string;
  summary: string;
  /** The spec's section, where it has one. */
  spec?: string;
  tag: 'Videos' | 'Images' | 'Assets' | 'Account' | 'Media' | 'Settings' | 'Test helpers' | 'Document';
  auth: Auth;
  /** Takes `Idempotency-Key` (spec 4.1, 4.2, 4.7, 7). */
  idempotent?: boolean;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A JSON body. */
  body?: z.ZodType;
  /** A multipart/form-data body, read as it streams by the route itself. */
  multipart?: z.ZodObject;
  /** An array member of the body whose failing item a refusal names as `item_index` (spec 4.2). */
  indexed?: string;
  /**
   * A refusal of the body carries `pointer`, the JSON Pointer (RFC 6901) of the member at fault
   * (`/clips/3/duration`): for bodies written as files (seed fixtures), where a path in words is not enough.
   * See `pointerRefusal` in testing/pointer.ts.
   */
  pointer?: boolean;
  responses: Readonly<Record<number, ResponseSpec>>;
  /** The problem codes this route answers besides those of its auth, its body and every route (spec 7). */
  problems: readonly ProblemCode[];
  /** Extra OpenAPI members (`x-…`) only where the spec needs them. */
  deprecated?: boolean;
}

/** A JSON answer; its schema's type is kept, so a handler's answer and a client are typed by it. */
const json = <S extends z.ZodType>(description: string, schema: S, headers?: ResponseSpec['headers']): ResponseSpec & { schema: S } => (headers ? { description, schema, headers } : { description, schema });
const created = <S extends z.ZodType>(description: string, schema: S) => json(description, schema, ['Idempotent-Replayed']);

/** Every route of the JSON API, in the order of spec section 4, then the settings and the test helpers. */
export const ROUTES = [
  {
    operationId: 'createVideo', method: 'POST', path: '/v1/videos', spec: '4.1', tag: 'Videos', auth: 'key', idempotent: true, body: VideoRequest,
    summary: 'Start a clip from a prompt and/or reference photos',
    responses: { 202: created('The clip was accepted and charged (CreateVideoResponse).', CreateVideoResponse) },
    problems: ['missing_input', 'invalid_duration', 'invalid_ratio', 'invalid_model', 'invalid_resolution', 'resolution_model_mismatch', 'too_many_images', 'invalid_image_url', 'invalid_asset_id', 'invalid_callback_url', 'invalid_subject_consent', 'invalid_parameter', 'reference_media_unavailable', 'consent_required', 'photo_rejected', 'image_fetch_failed', 'region_unavailable', 'task_create_failed', 'upstream_busy', 'no_session_available', 'moderation_pending', 'generation_paused'],
  },
  {
    operationId: 'createVideoBatch', method: 'POST', path: '/v1/videos/batch', spec: '4.2', tag: 'Videos', auth: 'key', idempotent: true, body: BatchRequest, indexed: 'items',
    summary: `Start 1-${LIMITS.batchItems} clips at once, all or nothing`,
    responses: { 207: created('Every item was accepted and the total charged (BatchResponse; 207 even when all succeed).', BatchResponse) },
    problems: ['batch_too_large', 'missing_input', 'invalid_duration', 'invalid_ratio', 'invalid_model', 'invalid_resolution', 'resolution_model_mismatch', 'too_many_images', 'invalid_image_url', 'invalid_asset_id', 'invalid_callback_url', 'invalid_subject_consent', 'invalid_parameter', 'reference_media_unavailable', 'consent_required', 'photo_rejected', 'image_fetch_failed', 'region_unavailable', 'task_create_failed', 'upstream_busy', 'no_session_available', 'moderation_pending', 'generation_paused'],
  },
  {
    operationId: 'listVideos', method: 'GET', path: '/v1/videos', spec: '4.3', tag: 'Videos', auth: 'key', query: VideoListQuery,
    summary: 'The clips of the account, newest first',
    responses: { 200: json('A page of clips (VideoList).', VideoList) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'getVideo', method: 'GET', path: '/v1/videos/{id}', spec: '4.4', tag: 'Videos', auth: 'key', params: VideoPath,
    summary: 'A clip, with fresh signed links once done',
    responses: { 200: json('The clip (Video).', Video) },
    problems: ['not_found'],
  },
  {
    operationId: 'deleteVideo', method: 'DELETE', path: '/v1/videos/{id}', spec: '4.5', tag: 'Videos', auth: 'key', params: VideoPath,
    summary: 'Cancel a queued clip (refunded), or delete a finished one',
    responses: { 200: json('Cancelled or deleted (DeleteVideoResponse).', DeleteVideoResponse) },
    problems: ['not_found', 'already_rendering'],
  },
  {
    operationId: 'retryVideo', method: 'POST', path: '/v1/videos/{id}/retry', spec: '4.6', tag: 'Videos', auth: 'key', params: VideoPath,
    summary: 'Retry a clip that failed with a retryable error_code, as a new task',
    responses: { 202: json('The retry was accepted and charged (RetryResponse).', RetryResponse) },
    problems: ['not_found', 'not_failed', 'not_retryable', 'cannot_retry_a_retry', 'already_retried', 'retry_in_progress', 'consent_required', 'invalid_asset_id', 'task_create_failed', 'upstream_busy'],
  },
  {
    operationId: 'createImage', method: 'POST', path: '/v1/images', spec: '4.7', tag: 'Images', auth: 'key', idempotent: true, body: ImageRequest,
    summary: 'Start an image job: from a description, a template, photo edits, or an AI character',
    responses: { 202: created('The job started and its credits are reserved (Image job, status generating).', ImageJob) },
    problems: ['missing_input', 'preset_not_found', 'field_required', 'photos_required', 'too_many_images', 'character_no_photos', 'invalid_asset_id', 'invalid_image_url', 'invalid_ratio', 'invalid_subject_consent', 'invalid_parameter', 'consent_required', 'prompt_blocked', 'document_blocked', 'religious_text', 'minor_blocked', 'text_script_unsupported', 'cost_exceeds_max', 'photo_rejected', 'image_fetch_failed', 'concurrency_limit', 'rate_limited', 'upstream_busy', 'moderation_pending', 'generation_paused'],
  },
  {
    operationId: 'listImages', method: 'GET', path: '/v1/images', spec: '4.9', tag: 'Images', auth: 'key', query: ImageListQuery,
    summary: 'The image jobs of the account, newest first',
    responses: { 200: json('A page of image jobs; next_before is the cursor of the next page.', ImageJobList) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'getImage', method: 'GET', path: '/v1/images/{id}', spec: '4.10', tag: 'Images', auth: 'key', params: ImagePath, query: ImageWaitQuery,
    summary: `An image job, optionally waiting up to ${LIMITS.imageWaitSeconds} s for it to end`,
    responses: { 200: json('The image job.', ImageJob) },
    problems: ['not_found', 'invalid_parameter'],
  },
  {
    operationId: 'deleteImage', method: 'DELETE', path: '/v1/images/{id}', spec: '4.11', tag: 'Images', auth: 'key', params: ImagePath,
    summary: 'Delete the images of a job (no refund)',
    responses: { 200: json('The images are deleted; their links stop working.', DeleteImageResponse) },
    problems: ['not_found'],
  },
  {
    operationId: 'uploadAsset', method: 'POST', path: '/v1/assets', spec: '4.12', tag: 'Assets', auth: 'key', multipart: AssetUploadForm,
    summary: 'Upload a reference photo (moderated once, reused); identical files are deduplicated',
    responses: { 200: json('The asset (upload response of spec 2.6).', AssetUpload) },
    problems: ['no_file', 'bad_mime', 'invalid_subject_consent', 'invalid_parameter', 'too_large', 'moderation_rejected'],
  },
  {
    operationId: 'listAssets', method: 'GET', path: '/v1/assets', spec: '4.13', tag: 'Assets', auth: 'key', query: AssetListQuery,
    summary: 'The trusted image assets of the account',
    responses: { 200: json('A page of trusted assets.', AssetList) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'getAsset', method: 'GET', path: '/v1/assets/{id}', spec: '4.14', tag: 'Assets', auth: 'key', params: AssetPath,
    summary: 'An asset with its moderation status',
    responses: { 200: json('The asset.', Asset) },
    problems: ['not_found'],
  },
  {
    operationId: 'deleteAsset', method: 'DELETE', path: '/v1/assets/{id}', spec: '4.15', tag: 'Assets', auth: 'key', params: AssetPath,
    summary: 'Delete an asset',
    responses: { 200: json('Deleted.', DeleteAssetResponse) },
    problems: ['not_found'],
  },
  {
    operationId: 'getAccount', method: 'GET', path: '/v1/account', spec: '4.16', tag: 'Account', auth: 'key',
    summary: 'The balance and API usage',
    responses: { 200: json('The account.', Account) },
    problems: [],
  },
  {
    operationId: 'getPricing', method: 'GET', path: '/v1/pricing', spec: '4.17', tag: 'Account', auth: 'none',
    summary: 'The current prices (no key)',
    responses: { 200: json('The prices.', Pricing) },
    problems: [],
  },
  {
    operationId: 'getMedia', method: 'GET', path: '/v1/media/{file}', spec: '4.18', tag: 'Media', auth: 'none', params: MediaPath, query: MediaQuery,
    summary: 'A clip or its poster by signed link (no key: the signature is the credential)',
    responses: {
      200: { description: 'The file.', files: ['video/mp4', 'image/jpeg'], headers: ['Accept-Ranges', 'Content-Disposition'] },
      206: { description: 'The requested byte range.', files: ['video/mp4', 'image/jpeg'], headers: ['Content-Range', 'Accept-Ranges'] },
      302: { description: 'A redirect to a short-lived storage URL (with `serve --media-redirect`).', headers: ['Location'] },
    },
    problems: ['invalid_signature', 'not_found', 'media_not_ready', 'link_expired', 'range_not_satisfiable'],
  },
  {
    operationId: 'getOpenApi', method: 'GET', path: '/v1/openapi.json', tag: 'Document', auth: 'none',
    summary: 'This OpenAPI 3.1 document (no key)',
    responses: { 200: json('The document.', z.looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({}), paths: z.looseObject({}) })) },
    problems: [],
  },
  {
    operationId: 'topUp', method: 'POST', path: TOP_UP_PAGE_PATH, tag: 'Settings', auth: 'settings', body: TopUpRequest,
    summary: 'Add bought credits (what the web UI’s payment page does)',
    responses: { 200: json('The new balance.', TopUpResponse) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'listKeys', method: 'GET', path: '/settings/keys', tag: 'Settings', auth: 'settings',
    summary: 'The live API keys (never a token or a secret)',
    responses: { 200: json('The keys.', ApiKeyList) },
    problems: [],
  },
  {
    operationId: 'createKey', method: 'POST', path: '/settings/keys', spec: '5.2', tag: 'Settings', auth: 'settings',
    summary: `A new API key and its webhook secret, shown once (at most ${LIMITS.keysPerAccount}; needs a balance of ${LIMITS.minBalanceToCreateKeys})`,
    responses: { 201: json('The key, its token and its webhook secret.', CreatedApiKey) },
    problems: ['insufficient_credits', 'key_limit_reached'],
  },
  {
    operationId: 'revokeKey', method: 'DELETE', path: '/settings/keys/{id}', tag: 'Settings', auth: 'settings', params: KeyPath,
    summary: 'Revoke a key: the next request with it is 401',
    responses: { 200: json('Revoked.', RevokedApiKey) },
    problems: ['not_found'],
  },
  {
    operationId: 'rotateSecret', method: 'POST', path: '/settings/keys/{id}/rotate-secret', spec: '5.5', tag: 'Settings', auth: 'settings', params: KeyPath,
    summary: 'A new webhook signing secret for the key, shown once',
    responses: { 200: json('The new secret.', RotatedSecret) },
    problems: ['not_found'],
  },
  {
    operationId: 'setDefaultAssets', method: 'PUT', path: '/settings/keys/{id}/default-assets', spec: '4.1', tag: 'Settings', auth: 'settings', params: KeyPath, body: DefaultAssetsRequest,
    summary: 'The photos a clip uses when it names none',
    responses: { 200: json('The key.', ApiKeyView) },
    problems: ['not_found', 'invalid_asset_id', 'too_many_images'],
  },
  {
    operationId: 'listAssistants', method: 'GET', path: '/settings/assistants', spec: '5.7', tag: 'Settings', auth: 'settings',
    summary: 'The assistants connected to the account, with their limits',
    responses: { 200: json('The assistants.', AssistantList) },
    problems: [],
  },
  {
    operationId: 'updateAssistant', method: 'PATCH', path: '/settings/assistants/{id}', spec: '5.7', tag: 'Settings', auth: 'settings', params: AssistantPath, body: DailyLimitRequest,
    summary: "Change an assistant's daily limit",
    responses: { 200: json('The assistant.', AssistantView) },
    problems: ['not_found', 'invalid_parameter'],
  },
  {
    operationId: 'disconnectAssistant', method: 'DELETE', path: '/settings/assistants/{id}', spec: '5.7', tag: 'Settings', auth: 'settings', params: AssistantPath,
    summary: 'Disconnect an assistant: its tokens stop working at once',
    responses: { 200: json('Disconnected.', DisconnectedAssistant) },
    problems: ['not_found'],
  },
  ...SERVED_TEST_HELPER_ROUTES,
] as const satisfies readonly RouteSpec[];

export type Route = (typeof ROUTES)[number];
export type OperationId = Route['operationId'];

/** The route of an operation. */
export function routeOf<const Id extends OperationId>(operationId: Id): Extract<Route, { operationId: Id }> {
  return ROUTES.find((route) => route.operationId === operationId) as Extract<Route, { operationId: Id }>;
}

/**
 * Whether a JSON body may be left out: a body schema that takes `{}` (every member optional), as which the
 * service reads a request without a body (`runner/steps.ts`); the document marks the others required.
 */
export function bodyOptional(body: z.ZodType): boolean {
  return body.safeParse({}).success;
}

/** The problems every route of `auth` can answer, besides its own (spec 4, 5 and 7). */
export function commonProblems(route: RouteSpec): ProblemCode[] {
  const codes: ProblemCode[] = [];
  if (route.auth !== 'none') codes.push('invalid_auth_header', 'invalid_api_key', 'rate_limit_exceeded');
  if (route.auth === 'key') codes.push('insufficient_credits');
  if (route.idempotent) codes.push('invalid_idempotency_key', 'idempotency_in_progress', 'idempotency_key_reused', 'insufficient_credits');
  // A JSON body must say so (Content-Type: application/json or a +json type).
  if (route.body) codes.push('invalid_json', 'body_too_large', 'unsupported_media_type');
  // Redis (serve --redis) that does not answer a rate-limit or idempotency lookup: nothing was done.
  if (route.auth !== 'none') codes.push('upstream_busy');
  codes.push('internal_error');
  return [...new Set(codes)];
}
