import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { openApiDocument, type ClosedLists } from '../contract/openapi.js';
import { pricingView } from '../contract/pricing.js';
import { ServiceError } from '../contract/problems.js';
import type { Route } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import type { Service } from '../service.js';
import type { MediaAnswer } from '../resources/videos/media.js';
import { receiveUpload } from './multipart.js';
import { WRITTEN } from './pipeline.js';

type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

/** What one route's handler gets: its caller, and its path, query and body as the contract parsed them. */
export interface InputOf<R extends Route> {
  /** `null` on a public route, and for the admin token on a test helper (it acts for every account). */
  caller: R['auth'] extends 'none' | 'admin' ? null : R['auth'] extends 'admin_or_key' ? Caller | null : Caller;
  params: Out<R extends { params: infer P } ? P : undefined>;
  query: Out<R extends { query: infer Q } ? Q : undefined>;
  body: Out<R extends { body: infer B } ? B : undefined>;
  req: IncomingMessage;
  res: ServerResponse;
}

/** The schemas of a route's 2xx answers. */
type SuccessSchemas<R extends Route> = { [S in keyof R['responses']]: `${S & number}` extends `2${string}` ? (R['responses'][S] extends { schema: infer T extends z.ZodType } ? T : never) : never }[keyof R['responses']];

/**
 * What a route's handler answers: what its 2xx schema takes (`z.input`, the view before
 * the schema's transforms), or `WRITTEN` for a route whose 2xx is a file it wrote itself.
 */
export type AnswerOf<R extends Route> = [SuccessSchemas<R>] extends [never] ? typeof WRITTEN : z.input<SuccessSchemas<R>>;

/** One handler per operation of the contract: the compiler refuses a route left out or one too many, and an answer its 2xx schema does not describe. */
export type Handlers = { [R in Route as R['operationId']]: (input: InputOf<R>) => AnswerOf<R> | Promise<AnswerOf<R>> };

/** The assistant settings (`/settings/assistants`), served when the assistant endpoint is on. */
export interface AssistantSettingsCommands {
  list(caller: Caller): AnswerOf<RouteOf<'listAssistants'>>;
  update(caller: Caller, id: string, dailyLimit: number | null): Promise<AnswerOf<RouteOf<'updateAssistant'>>>;
  disconnect(caller: Caller, id: string): Promise<AnswerOf<RouteOf<'disconnectAssistant'>>>;
}

type RouteOf<O extends Route['operationId']> = Extract<Route, { operationId: O }>;

const assistantOff = () => new ServiceError('not_found', 'The assistant endpoint is off (serve --no-assistant).');

/** The collaborators the route handlers call: what of `Service` they need, not all of it. */
export type HandlerParts = Pick<Service, 'videos' | 'images' | 'assets' | 'account' | 'media' | 'testClock' | 'testAccounts' | 'requests' | 'faults' | 'webhookChaos' | 'seeds' | 'files' | 'origin' | 'reset'>;

/**
 * Each operation of the contract bound to its command, one line each, reading like spec section 4's
 * table. The pipeline has checked the key, the limits, the Idempotency-Key and the input by then.
 * `closedLists` is what the composition root gives the OpenAPI document (`OpenApiOptions.closedLists`).
 */
export function handlers(service: HandlerParts, assistant: AssistantSettingsCommands | null, closedLists: ClosedLists): Handlers {
  const { videos, images, assets, account, media, testClock, testAccounts, requests, faults } = service;
  return {
    createVideo: ({ caller, body }) => videos.create(caller, videos.command(caller, body)),
    createVideoBatch: ({ caller, body }) =>
      videos.createBatch(caller, body.map((item, index) => {
        try {
          return videos.command(caller, item);
        } catch (error) {
          // Spec 4.2: the failing item is named (missing_input, invalid_callback_url), as createBatch names a photo's.
          throw error instanceof ServiceError ? new ServiceError(error.code, `items[${index}]: ${error.detail}`, { extra: { ...error.extra, item_index: index } }) : error;
        }
      })),
    listVideos: ({ caller, query }) => videos.list(caller, query),
    getVideo: ({ caller, params }) => videos.get(caller, params.id),
    deleteVideo: ({ caller, params }) => videos.remove(caller, params.id),
    retryVideo: ({ caller, params }) => videos.retry(caller, params.id),
    createImage: ({ caller, body }) => images.create(caller, body),
    listImages: ({ caller, query }) => images.list(caller, query),
    getImage: ({ caller, params, query }) => images.get(caller, params.id, { waitMs: query.wait * 1000 }),
    deleteImage: ({ caller, params }) => images.remove(caller, params.id),
    uploadAsset: async ({ caller, req }) => {
      const received = await receiveUpload(req, { dir: service.files.uploads });
      if (!received.ok) throw ServiceError.from(received.refusal);
      return assets.upload(caller, received.value);
    },
    listAssets: ({ caller, query }) => assets.list(caller, query),
    getAsset: ({ caller, params }) => assets.get(caller, params.id),
    deleteAsset: ({ caller, params }) => assets.remove(caller, params.id),
    getAccount: ({ caller }) => account.view(caller),
    getPricing: () => pricingView(),
    getMedia: async ({ params, query, req, res }): Promise<typeof WRITTEN> => sendMedia(res, await media.open(params.file, query, req.headers.range)),
    getOpenApi: () => documentFor(service.origin, closedLists),
    topUp: ({ caller, body }) => account.topUp(caller, body.credits),
    listKeys: ({ caller }) => account.keys(caller),
    createKey: ({ caller }) => account.createKey(caller),
    revokeKey: ({ caller, params }) => account.revokeKey(caller, params.id),
    rotateSecret: ({ caller, params }) => account.rotateSecret(caller, params.id),
    setDefaultAssets: ({ caller, params, body }) => account.setDefaultAssets(caller, params.id, body.asset_ids),
    listAssistants: ({ caller }) => (assistant ? assistant.list(caller) : Promise.reject(assistantOff())),
    updateAssistant: ({ caller, params, body }) => (assistant ? assistant.update(caller, params.id, body.daily_limit) : Promise.reject(assistantOff())),
    disconnectAssistant: ({ caller, params }) => (assistant ? assistant.disconnect(caller, params.id) : Promise.reject(assistantOff())),
    getClock: ({ caller }) => testClock.view(caller?.account.id ?? null),
    advanceClock: ({ caller, body }) => testClock.advance(body.seconds, testClock.whose(caller?.account.id ?? null, body.account)),
    createTestAccount: ({ body }) => testAccounts.create(body),
    listTestAccounts: () => testAccounts.list(),
    deleteTestAccount: ({ params }) => testAccounts.remove(params.id),
    listRequests: ({ caller, query }) => requests.list(caller, query),
    clearRequests: ({ caller, query }) => requests.clear(caller, query),
    createFaultRule: ({ caller, body }) => faults.add(caller, body),
    listFaultRules: ({ caller, query }) => faults.list(caller, query),
    deleteFaultRule: ({ caller, params }) => faults.remove(caller, params.id),
    setWebhookChaos: ({ caller, body }) => service.webhookChaos.set(caller, body),
    resetService: () => service.reset(),
    seedService: ({ body }) => service.seeds.apply(body),
  };
}

/** Writes a media answer: a file (whole or one range) streamed, or a 302 to storage. */
export function sendMedia(res: ServerResponse, answer: MediaAnswer): typeof WRITTEN {
  if (answer.kind === 'redirect') {
    res.writeHead(302, { location: answer.location, 'cache-control': 'no-store' }).end();
    return WRITTEN;
  }
  res.writeHead(answer.status, answer.headers);
  createReadStream(answer.path, { start: answer.start, end: answer.end }).on('error', () => res.destroy()).pipe(res);
  return WRITTEN;
}

let document: { origin: string; closedLists: ClosedLists; body: AnswerOf<RouteOf<'getOpenApi'>> } | undefined;
/** The OpenAPI document for an origin: made once, as it changes with nothing else. */
function documentFor(origin: string, closedLists: ClosedLists): AnswerOf<RouteOf<'getOpenApi'>> {
  // The document is built to the contract's own schema of it (openapi.ts), which its tests check.
  if (document?.origin !== origin || document.closedLists !== closedLists) document = { origin, closedLists, body: openApiDocument({ origin, closedLists }) as AnswerOf<RouteOf<'getOpenApi'>> };
  return document.body;
}
