import { createReadStream } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { assetFile, deleteAsset, getAsset, listAssets, uploadAsset } from '../assets/operations.js';
import { createImage, deleteImage, getImage, imageFile, listImages } from '../images/operations.js';
import { mediaFile } from '../resources/videos/media.js';
import { openApiDocument } from '../contract/openapi.js';
import { pricingView } from '../contract/pricing.js';
import { fail, notSaved, ok, type Result } from '../result.js';
import type { Authenticated } from '../guard.js';
import { StoreWriteError } from '../core/store.js';
import { Service, type Caller, type ServiceOptions } from '../service.js';
import { createKey, listKeys, revokeKey, rotateSecret, setDefaultAssets, topUp } from '../settings.js';
import { advanceClock, getClock } from '../test-helpers.js';
import { createBatch, createVideo, deleteVideo, getAccount, getVideo, listVideos, retryVideo } from '../videos/operations.js';
import { Router, send, type Guard, type RouteRequest } from './router.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { AssistantEndpoint, MCP_PATH, MCP_STATUS_PATH } from '../assistant/endpoint.js';
import { isOAuthPath, OAUTH_PATHS } from '../assistant/oauth/paths.js';
import { checkOriginAndHost } from '../assistant/origin-check.js';
import { PROTECTED_RESOURCE_PATH, ROOT_PROTECTED_RESOURCE_PATH } from '../assistant/sign-in.js';
import { PAGE_FILES_PATH, pageFileRoute } from '../pages/page.js';
import { receiveTopUp, showTopUp, TOP_UP_FORM_PATH, TOP_UP_PAGE_PATH } from '../pages/top-up.js';
import { receivePhotoUpload, showPhotoUpload } from '../pages/photo-upload.js';
import { PHOTO_UPLOAD_PATH } from '../resources/photos/uploads.js';

/** The service as a Node request listener: `http.createServer(app)`, supertest's `request(app)`, or `expressApp.use(app)`. */
export interface ServiceApp {
  (req: IncomingMessage, res: ServerResponse): void;
  readonly service: Service;
  /** The assistant endpoint at `/mcp`, or `null` when it is turned off. */
  readonly assistant: AssistantEndpoint | null;
  /** Stops the service's timers and emitter and writes its data file. */
  close(): Promise<void>;
}

/**
 * Builds the whole v1 API of the spec on a `Service` (opened from `options`, or the one given): `/v1`
 * (keyed except GET /pricing and GET /media), the account settings at `/settings` and the simulated
 * clock at `/test_helpers` (both keyed, and open below 10 credits, since they are how one tops up).
 * @example
 * const app = await createServiceApp({ file: false, speed: 'fast' });
 * http.createServer(app).listen(8080);
 */
export async function createServiceApp(options: AppOptions = {}): Promise<ServiceApp> {
  const service = options.service ?? (await Service.open(options));
  const warn = options.warn ?? ((message: string) => console.warn(`cliphook serve: ${message}`));
  const report = (error: Error) => warn(`request failed: ${error.stack ?? error.message}`);
  const assistant =
    options.assistant === false ? null : new AssistantEndpoint(service, { onError: (error) => warn(`assistant endpoint: ${error.message}`), fetchClientMetadata: options.fetchClientMetadata });
  const router = routes(service, assistant);
  const app = ((req, res) => {
    // The assistant's authorization server (oidc-provider) answers its own paths: /oauth/… and its metadata.
    if (assistant && isOAuthPath((req.url ?? '/').split('?', 1)[0]!)) {
      return void assistant.signIn.oauth().then((oauth) => oauth.handle(req, res)).catch((error: Error) => {
        report(error);
        if (!res.headersSent) send(res, fail('internal_error'));
        else res.destroy();
      });
    }
    void router.handle(req, res, report).catch(report);
  }) as ServiceApp;
  Object.defineProperties(app, {
    service: { value: service },
    assistant: { value: assistant },
    close: {
      value: async () => {
        await assistant?.close();
        await service.close();
      },
    },
  });
  return app;
}

/** What `createServiceApp` takes: the service's options (or a service), and whether the assistant endpoint is on. */
export type AppOptions = ServiceOptions & {
  service?: Service;
  /** Serve the assistant endpoint (MCP) at `/mcp`, with its OAuth sign-in; `false` answers 404 there (`serve --no-assistant`). @default true */
  assistant?: boolean;
  /**
   * How the authorization server connects to fetch client ID metadata documents (an `https://` URL as
   * `client_id`). The URL checks (https, no literal private or loopback address, no `localhost`) run
   * before it either way.
   * @default https whose lookup refuses private and loopback addresses before connecting (the webhooks' guard)
   */
  fetchClientMetadata?: typeof fetch;
};

/**
 * Runs a handler as one unit of the store (issue 20 item 9): when a write it needs fails, what it changed is
 * taken back and the answer is 503 upstream_busy with Retry-After, so a client's retry cannot apply it twice.
 */
async function saved(service: Service, run: () => Promise<Result | undefined>): Promise<Result | undefined> {
  try {
    return await service.store.unit(run);
  } catch (error) {
    if (!(error instanceof StoreWriteError)) throw error;
    service.warn(`a change was not saved and was taken back: ${error.message}`);
    return notSaved();
  }
}

function routes(service: Service, assistant: AssistantEndpoint | null): Router {
  const guard = (lowBalanceOk: boolean): Guard<Caller> => async (req) => {
    const checked = await service.guard(req.headers.authorization, { lowBalanceOk, address: req.socket.remoteAddress });
    return checked.ok ? { ok: true, value: { caller: checked.caller, headers: checked.caller.headers } } : checked;
  };
  // `/v1`: every keyed endpoint answers 402 below 10 credits (spec 4). The idempotent POSTs check it
  // themselves, after looking for a replay: a replay returns the original response whatever the balance.
  const keyed = { guard: guard(false) };
  const idempotentPost = { guard: guard(true) };
  const settings = { guard: guard(true) };
  const idempotencyKey = (req: IncomingMessage) => req.headers['idempotency-key'];
  type Req = RouteRequest<Caller>;

  const router = new Router({ around: (run) => saved(service, run) })
    .add('GET', '/v1/pricing', () => ok(200, pricingView()))
    // The contract as OpenAPI 3.1 (issue 21), no key: made once per origin, as it changes with nothing else.
    .add('GET', '/v1/openapi.json', () => ok(200, documentFor(service.origin)))
    .add('GET', '/v1/media/:file', async ({ req, params, query }, res) => {
      const answer = await mediaFile(service, params.file!, query, req.headers.range);
      if ('body' in answer) return answer;
      res.writeHead(answer.status, answer.headers);
      createReadStream(answer.path, { start: answer.start, end: answer.end }).on('error', () => res.destroy()).pipe(res);
      return undefined;
    })
    .add('POST', '/v1/videos', ({ req, caller, body }: Req) => createVideo(service, caller, body, idempotencyKey(req)), idempotentPost)
    .add('POST', '/v1/videos/batch', ({ req, caller, body }: Req) => createBatch(service, caller, body, idempotencyKey(req)), idempotentPost)
    .add('GET', '/v1/videos', ({ caller, query }: Req) => listVideos(service, caller, query), keyed)
    .add('GET', '/v1/videos/:id', ({ caller, params }: Req) => getVideo(service, caller, params.id!), keyed)
    .add('DELETE', '/v1/videos/:id', ({ caller, params }: Req) => deleteVideo(service, caller, params.id!), keyed)
    .add('POST', '/v1/videos/:id/retry', ({ caller, params }: Req) => retryVideo(service, caller, params.id!), keyed)
    .add('GET', '/v1/account', ({ caller }: Req) => getAccount(service, caller), keyed)
    .add('POST', '/v1/assets', ({ req, caller }: Req) => uploadAsset(service, caller, req), { ...keyed, rawBody: true })
    .add('GET', '/v1/assets', ({ caller, query }: Req) => listAssets(service, caller, query), keyed)
    .add('GET', '/v1/assets/:id', ({ caller, params }: Req) => getAsset(service, caller, params.id!), keyed)
    .add('DELETE', '/v1/assets/:id', ({ caller, params }: Req) => deleteAsset(service, caller, params.id!), keyed)
    .add('POST', '/v1/images', ({ req, caller, body }: Req) => createImage(service, caller, body, idempotencyKey(req)), idempotentPost)
    .add('GET', '/v1/images', ({ caller, query }: Req) => listImages(service, caller, query), keyed)
    .add('GET', '/v1/images/:id', ({ caller, params, query }: Req) => getImage(service, caller, params.id!, query), keyed)
    .add('DELETE', '/v1/images/:id', ({ caller, params }: Req) => deleteImage(service, caller, params.id!), keyed)
    // Public, unguessable file links (spec 2.6 public_url, 2.7 url and thumbnail_url): the token is the credential.
    .add('GET', '/files/assets/:file', ({ params }, res) => sendFile(res, assetFile(service, params.file!)))
    .add('GET', '/files/images/:file', ({ params }, res) => sendFile(res, imageFile(service, params.file!)))
    .add('POST', '/settings/top-up', ({ caller, body }: Req) => topUp(service, caller, body), settings)
    // The page a 402's user_action and the assistant's get_topup_link send a person to.
    .add('GET', TOP_UP_PAGE_PATH, (_, res) => showTopUp(res))
    .add('POST', TOP_UP_FORM_PATH, ({ req }, res) => receiveTopUp(service, req, res), { rawBody: true })
    .add('GET', '/settings/keys', ({ caller }: Req) => listKeys(service, caller), settings)
    .add('POST', '/settings/keys', ({ caller }: Req) => createKey(service, caller), settings)
    .add('DELETE', '/settings/keys/:id', ({ caller, params }: Req) => revokeKey(service, caller, params.id!), settings)
    .add('POST', '/settings/keys/:id/rotate-secret', ({ caller, params }: Req) => rotateSecret(service, caller, params.id!), settings)
    .add('PUT', '/settings/keys/:id/default-assets', ({ caller, params, body }: Req) => setDefaultAssets(service, caller, params.id!, body), settings)
    .add('GET', '/test_helpers/clock', () => getClock(service), settings)
    .add('POST', '/test_helpers/clock/advance', ({ body }: Req) => advanceClock(service, body), settings)
    // The webhook's video_url (spec 6.5): the clip's page in the web UI, which opens only for a signed-in browser.
    .add('GET', '/videos/:id', () => {
      const result = fail('invalid_auth_header', { detail: 'This page opens only for a signed-in browser; GET /v1/videos/{id} returns a signed link that works anywhere.' });
      return { ...result, headers: { ...result.headers, 'www-authenticate': 'Bearer realm="cliphook"' } };
    })
    .add('GET', MCP_STATUS_PATH, () => ok(200, assistantStatus(service, assistant !== null)))
    // The service's pages (issue 15): their CSS and scripts by file name, and the assistant's photo upload link.
    .add('GET', `${PAGE_FILES_PATH}/:file`, pageFileRoute)
    .add('GET', `${PHOTO_UPLOAD_PATH}/:token`, (request, res) => showPhotoUpload(service, request, res))
    .add('POST', `${PHOTO_UPLOAD_PATH}/:token`, (request, res) => receivePhotoUpload(service, request, res), { rawBody: true });
  if (assistant) {
    // The bearer API key or an OAuth access token: 401 with WWW-Authenticate (pointing to the RFC 9728
    // metadata). The endpoint then applies the same 60 a minute and 402 below 10 credits to what counts.
    const signedIn: Guard<Authenticated> = async (req) => {
      // DNS rebinding (MCP transport): a Host or Origin that is neither this machine nor the service is 403, first.
      const foreign = checkOriginAndHost(req, service.origin);
      if (foreign) return { ok: false, result: foreign };
      const checked = await assistant.signIn.identify(req.headers.authorization, req.socket.remoteAddress);
      return checked.ok ? { ok: true, value: { caller: checked.who, headers: {} } } : checked;
    };
    const handle = ({ req, caller }: RouteRequest<Authenticated>, res: ServerResponse) => assistant.handle(req, res, caller);
    for (const method of ['POST', 'GET', 'DELETE']) router.add(method, MCP_PATH, handle, { guard: signedIn, rawBody: true });
    // Public metadata, readable from any origin (browser-based assistants discover the sign-in with it).
    router.add('GET', PROTECTED_RESOURCE_PATH, () => ok(200, assistant.signIn.protectedResourceMetadata(), { 'access-control-allow-origin': '*' }));
    // RFC 9728 §3.3: the bare form would name the resource `{origin}`, which has no document (issue 20 item 5).
    router.add('GET', ROOT_PROTECTED_RESOURCE_PATH, () =>
      fail('not_found', { detail: `The origin itself is no OAuth-protected resource; the assistant endpoint's metadata is at ${service.origin}${PROTECTED_RESOURCE_PATH}.`, instance: ROOT_PROTECTED_RESOURCE_PATH }),
    );
    router
      .add('GET', `${OAUTH_PATHS.consent}/:uid`, ({ req }, res) => assistant.signIn.consent.show(req, res), { rawBody: true })
      .add('POST', `${OAUTH_PATHS.consent}/:uid`, ({ req }, res) => assistant.signIn.consent.submit(req, res), { rawBody: true })
      .add('GET', '/settings/assistants', ({ caller }: Req) => assistant.settings.list(caller), settings)
      .add('PATCH', '/settings/assistants/:id', ({ caller, params, body }: Req) => assistant.settings.update(caller, params.id!, body), settings)
      .add('DELETE', '/settings/assistants/:id', ({ caller, params }: Req) => assistant.settings.disconnect(caller, params.id!), settings);
  }
  return router;
}

let document: { origin: string; body: unknown } | undefined;
function documentFor(origin: string): unknown {
  if (document?.origin !== origin) document = { origin, body: openApiDocument({ origin }) };
  return document.body;
}

/** GET /mcp/status: whether the assistant endpoint is on, where, and how one signs in (spec 5.7). */
function assistantStatus(service: Service, enabled: boolean) {
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

/** Streams a stored file, or answers 404 when its link no longer works (deleted). */
async function sendFile(res: ServerResponse, file: { path: string; mime: string } | null): Promise<Result | undefined> {
  if (!file) return fail('not_found', { detail: 'This file was deleted, or never existed.' });
  res.writeHead(200, { 'content-type': file.mime, 'cache-control': 'private, max-age=3600', 'x-content-type-options': 'nosniff' });
  createReadStream(file.path).on('error', () => res.destroy()).pipe(res);
  return undefined;
}

/** What `startService` resolves to: everything a user's tests need, as stripe-mock's URL and key are. */
export interface StartedService {
  /** The base URL, with `/v1`: `http://127.0.0.1:54321/v1`. */
  url: string;
  /** The origin, for `/settings` and `/test_helpers`. */
  origin: string;
  apiKey: string;
  webhookSecret: string;
  clock: Service['clock'];
  service: Service;
  close(): Promise<void>;
}

/**
 * Starts the service on 127.0.0.1 and a free port for a user's own tests: the in-process equivalent of
 * stripe-mock, with state, webhooks and a clock the test moves. In memory unless `file` is given.
 * @example
 * const svc = await startService();
 * const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}` }, body: JSON.stringify({ prompt: 'a fox' }) });
 * await svc.clock.advance(10_000);
 * await svc.close();
 */
export async function startService(options: Omit<AppOptions, 'service'> & { port?: number; host?: string } = {}): Promise<StartedService> {
  const { port = 0, host = '127.0.0.1', ...rest } = options;
  const app = await createServiceApp({ file: false, ...rest });
  const server = createServer(app);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (error) {
    await app.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const origin = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  app.service.origin = origin;
  const first = app.service.first();
  return {
    url: `${origin}/v1`,
    origin,
    apiKey: first.apiKey,
    webhookSecret: first.webhookSecret,
    clock: app.service.clock,
    service: app.service,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
    },
  };
}

