import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { problem } from '../../protocol/problem.js';
import { ServiceError } from '../contract/problems.js';
import type { AssistantEndpoint } from '../assistant/endpoint.js';
import { MCP_PATH, MCP_STATUS_PATH } from '../assistant/endpoint.js';
import { OAUTH_PATHS } from '../assistant/oauth/paths.js';
import { PROTECTED_RESOURCE_PATH, ROOT_PROTECTED_RESOURCE_PATH } from '../assistant/sign-in.js';
import { pageFileRoute, PAGE_FILES_PATH } from '../pages/page.js';
import { receivePhotoUpload, showPhotoUpload, type PhotoUploadParts } from '../pages/photo-upload.js';
import { receiveTopUp, showTopUp, TOP_UP_FORM_PATH, type TopUpParts } from '../pages/top-up.js';
import { TOP_UP_PAGE_PATH } from '../contract/settings.js';
import { PHOTO_UPLOAD_PATH } from '../resources/photos/uploads.js';
import type { Result } from './result.js';
import type { Service } from '../service.js';
import type { ExtraRoute } from './dispatch.js';
import { sendMedia } from './operations.js';
import { headersOf, problemOf, sendJson, sendProblem, sendResult } from './respond.js';

/** The path of a request's target, as sent (the assistant endpoint's refusals: `/mcp` has no dot segments to resolve). */
const pathOf = (req: IncomingMessage) => (req.url ?? '/').split('?', 1)[0]!;

/** Writes what a page's or file's handler answered, its problem's `instance` the request's path (the router's, where it gives one). */
const write = (req: IncomingMessage, res: ServerResponse, result: Result, path = pathOf(req)) => sendResult(res, { ...result, body: withInstance(result.body, path) });

/** Runs a page's or file's handler and writes what it answers, when it did not write it itself. */
const answer = (run: (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: Record<string, string>) => Result | undefined | Promise<Result | undefined>) =>
  async (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: Record<string, string>, path: string) => {
    const result = await run(req, res, params, query);
    if (result && !res.headersSent) write(req, res, result, path);
  };

const withInstance = (body: unknown, path: string) => (body && typeof body === 'object' && 'code' in body && (body as { instance?: unknown }).instance === null ? { ...body, instance: path } : body);

/** Streams a stored file, or answers 404 when its link no longer works (deleted). */
function sendFile(res: ServerResponse, file: { path: string; mime: string } | null, path: string): void {
  if (!file) return sendProblem(res, problem('not_found', { detail: 'This file was deleted, or never existed.', instance: path }));
  res.writeHead(200, { 'content-type': file.mime, 'cache-control': 'private, max-age=3600', 'x-content-type-options': 'nosniff' });
  createReadStream(file.path).on('error', () => res.destroy()).pipe(res);
}

/** What the routes outside the contract read of the service: its file links and origin. */
export type ExtraParts = Pick<Service, 'assets' | 'images' | 'media' | 'origin'>;

/** The pages' collaborators, made by the composition root (http/app.ts) with the runner's chain. */
export interface ServicePages {
  topUp: TopUpParts;
  photoUploads: PhotoUploadParts;
}

/**
 * The routes outside the contract: the unguessable file links of assets and images (spec 2.6, 2.7), the
 * storage links of a media 302 (4.18), the clip page a webhook's `video_url` names (6.5), the service's
 * pages (top-up, photo upload), and the assistant endpoint with its status, metadata and consent page.
 */
export function extraRoutes(service: ExtraParts, assistant: AssistantEndpoint | null, pages: ServicePages): ExtraRoute[] {
  const routes: ExtraRoute[] = [
    { method: 'GET', path: '/files/assets/{file}', handle: (_req, res, { file }, _query, path) => sendFile(res, service.assets.file(file!), path) },
    { method: 'GET', path: '/files/images/{file}', handle: (_req, res, { file }, _query, path) => sendFile(res, service.images.file(file!), path) },
    {
      method: 'GET',
      path: '/storage/{file}',
      handle: async (req, res, { file }, query, path) => {
        try {
          sendMedia(res, await service.media.storage(file!, query, req.headers.range));
        } catch (error) {
          if (!(error instanceof ServiceError)) throw error;
          sendProblem(res, problemOf(error, { origin: service.origin, instance: path }), headersOf(error));
        }
      },
    },
    {
      method: 'GET',
      path: '/videos/{id}',
      // The webhook's video_url (spec 6.5): the clip's page in the web UI, which opens only for a signed-in browser.
      handle: (_req, res, _params, _query, path) =>
        sendProblem(res, problem('invalid_auth_header', { detail: 'This page opens only for a signed-in browser; GET /v1/videos/{id} returns a signed link that works anywhere.', instance: path }), { 'www-authenticate': 'Bearer realm="cliphook"' }),
    },
    { method: 'GET', path: MCP_STATUS_PATH, handle: (_req, res) => sendJson(res, 200, assistantStatus(service, assistant !== null)) },
    // The page a 402's user_action and the assistant's get_topup_link send a person to.
    { method: 'GET', path: TOP_UP_PAGE_PATH, handle: (_req, res) => void showTopUp(res) },
    { method: 'POST', path: TOP_UP_FORM_PATH, handle: (req, res) => void receiveTopUp(pages.topUp, req, res) },
    // The service's pages: their CSS and scripts by file name, and the assistant's photo upload link.
    { method: 'GET', path: `${PAGE_FILES_PATH}/{file}`, handle: answer((_req, res, params) => pageFileRoute({ params }, res)) },
    { method: 'GET', path: `${PHOTO_UPLOAD_PATH}/{token}`, handle: answer((req, res, params) => showPhotoUpload(pages.photoUploads, { req, params }, res)) },
    { method: 'POST', path: `${PHOTO_UPLOAD_PATH}/{token}`, handle: answer((req, res, params) => receivePhotoUpload(pages.photoUploads, { req, params }, res)) },
  ];
  if (!assistant) return routes;
  // The endpoint's own handler, so a call runs nothing of this module.
  const mcp = assistant.route(write);
  for (const method of ['POST', 'GET', 'DELETE']) routes.push({ method, path: MCP_PATH, handle: mcp });
  routes.push(
    // Public metadata, readable from any origin (browser-based assistants discover the sign-in with it).
    { method: 'GET', path: PROTECTED_RESOURCE_PATH, handle: (_req, res) => sendJson(res, 200, assistant.signIn.protectedResourceMetadata(), { 'access-control-allow-origin': '*' }) },
    // RFC 9728 §3.3: the bare form would name the resource `{origin}`, which has no document.
    {
      method: 'GET',
      path: ROOT_PROTECTED_RESOURCE_PATH,
      handle: (_req, res) => sendProblem(res, problem('not_found', { detail: `The origin itself is no OAuth-protected resource; the assistant endpoint's metadata is at ${service.origin}${PROTECTED_RESOURCE_PATH}.`, instance: ROOT_PROTECTED_RESOURCE_PATH })),
    },
    { method: 'GET', path: `${OAUTH_PATHS.consent}/{uid}`, handle: answer((req, res) => assistant.signIn.consent.show(req, res)) },
    { method: 'POST', path: `${OAUTH_PATHS.consent}/{uid}`, handle: answer((req, res) => assistant.signIn.consent.submit(req, res)) },
  );
  return routes;
}

/** GET /mcp/status: whether the assistant endpoint is on, where, and how one signs in (spec 5.7). */
function assistantStatus(service: Pick<Service, 'origin'>, enabled: boolean) {
  return {
    object: 'assistant_status',
    enabled,
    url: enabled ? `${service.origin}${MCP_PATH}` : null,
    transport: 'streamable-http',
    stateless: true,
    // The 2026-07-28 revision, and the 2024-2025 ones the SDK's stateless fallback serves.
    protocol_versions: enabled ? ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS] : [],
    auth: enabled ? ['bearer_api_key', 'oauth2'] : [],
    protected_resource_metadata: enabled ? `${service.origin}${PROTECTED_RESOURCE_PATH}` : null,
    authorization_server: enabled ? service.origin : null,
  };
}
