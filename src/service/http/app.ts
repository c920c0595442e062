import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testHelpersOf, type HelperParts } from '../testing/http/in-process.js';
import { HELPER_OPERATIONS, type TestHelpers } from '../testing/http/test-helpers.js';
import { problem } from '../../protocol/problem.js';
import { ROUTES, type RouteSpec } from '../contract/routes.js';
import { AssistantEndpoint } from '../assistant/endpoint.js';
import { isOAuthPath, OAUTH_ROOTS } from '../assistant/oauth/paths.js';
import { Service } from '../service.js';
import { linkedSteps, routeSteps } from './deps.js';
import { operationRunner, type Command } from '../runner/call.js';
import { faults, journal } from '../testing/steps.js';
import { faultClosedLists } from '../testing/fault-check.js';
import { ServiceRouter } from './dispatch.js';
import { extraRoutes, type ServicePages } from './extras.js';
import { handlers, type Handlers } from './operations.js';
import { routeRunner, type Handler } from './pipeline.js';
import { sendProblem } from './respond.js';
import type { Caller } from '../core/gate.js';
import type { AppOptions as PublicAppOptions, ServiceApp as PublicServiceApp, StartedService as PublicStartedService, StartOptions } from './public.js';

export type { ServiceAssistant } from './public.js';

/** The app with the service under it: for the CLI and the service's own tests, not published. */
export interface ServiceApp extends PublicServiceApp {
  readonly service: Service;
}

/** `createServiceApp`'s options, and in the service's own code a service already open. */
export type AppOptions = PublicAppOptions & { service?: Service };

/** The in-process test helpers of each app, for startService (they run on the app's chain). */
const helpersOf = new WeakMap<ServiceApp, TestHelpers>();

/**
 * Builds the whole v1 API of the spec on a `Service` (opened from `options`, or the one given), its router
 * made from the contract (`contract/routes.ts`): `/v1` (keyed except GET /pricing, GET /media and the
 * OpenAPI document), the account settings at `/settings` and the test helpers at `/test_helpers` (keyed,
 * open below 10 credits, since they are how one tops up), and beside them the service's pages, its file
 * links and the assistant endpoint with its sign-in.
 * @example
 * const app = await createServiceApp({ file: false, speed: 'fast' });
 * http.createServer(app).listen(8080);
 */
export async function createServiceApp(options: AppOptions = {}): Promise<ServiceApp> {
  const service = options.service ?? (await Service.open(options));
  const warn = options.warn ?? ((message: string) => console.warn(`cliphook serve: ${message}`));
  const report = (error: Error) => warn(`request failed: ${error.stack ?? error.message}`);
  // Bound once, as service.ts binds them, so the request's path runs no closure of this wiring.
  const now = service.clock.now.bind(service.clock);
  // The parts read the origin off the service where they name it: it is set once the server listens.
  const site = service;
  // The composition root plugs the test controls (testing/steps.ts) into the chain.
  const controls = { journal: journal({ journal: service.journal, now }), faults: faults({ rules: service.faultRules, site }) };
  const assistant =
    options.assistant === false ? null : new AssistantEndpoint(service, { controls, onError: (error) => warn(`assistant endpoint: ${error.message}`), fetchClientMetadata: options.fetchClientMetadata });
  const bound = handlers(service, assistant?.settings ?? null, faultClosedLists());
  const contract = (ROUTES as readonly RouteSpec[]).map((route) => ({ route, handler: bound[route.operationId as keyof Handlers] as unknown as Handler<Caller> }));
  const parts = { gate: service.gate, idempotency: service.idempotency, store: service.store, now, site, warn: service.warn, report };
  const steps = routeSteps(parts, controls);
  const runRoute = routeRunner(steps);
  // The pages and startService()'s helpers run their operation through the same chain.
  const runOperation = operationRunner(steps);
  const commands = bound as unknown as Record<string, Command>;
  const pages: ServicePages = {
    topUp: { site, run: runOperation, topUp: commands.topUp! },
    photoUploads: {
      site,
      photoUploads: service.photoUploads,
      uploadsDir: service.files.uploads,
      assets: service.assets,
      callerOf: (accountId) => service.accounts.withLiveKey(accountId) ?? null,
      run: operationRunner(linkedSteps(parts, controls)),
    },
  };
  const router = new ServiceRouter(contract, extraRoutes(service, assistant, pages), runRoute, report);
  const app = ((req, res) => service.clock.scope(() => {
    // Each request acts for nobody until its credential names an account, whose own time it then reads.
    // The assistant's authorization server (oidc-provider) answers its own paths: /oauth/… and its metadata.
    // Only a path under one of the OAuth paths' first segments asks (never /v1/…, /mcp).
    const url = req.url ?? '/';
    const second = url.indexOf('/', 1);
    if (assistant && second !== -1 && OAUTH_ROOTS.has(url.slice(1, second)) && isOAuthPath(url.split('?', 1)[0]!)) {
      return void assistant.signIn.oauth().then((oauth) => oauth.handle(req, res)).catch((error: Error) => {
        report(error);
        if (!res.headersSent) sendProblem(res, problem('internal_error'));
        else res.destroy();
      });
    }
    void router.handle(req, res);
  })) as ServiceApp;
  helpersOf.set(app, testHelpersOf({ run: runOperation, commands: Object.fromEntries(HELPER_OPERATIONS.map((id) => [id, commands[id]!])) as HelperParts['commands'], adminToken: service.adminToken }));
  Object.defineProperties(app, {
    service: { value: service },
    assistant: { value: assistant },
    routes: { value: router.routes },
    close: {
      value: async () => {
        await assistant?.close();
        await service.close();
      },
    },
  });
  return app;
}

/** The started service with the service under it: for the service's own tests, not published. */
export interface StartedService extends PublicStartedService {
  service: Service;
}

/**
 * Starts the service on 127.0.0.1 and a free port for a user's own tests: the in-process equivalent of
 * stripe-mock, with state, webhooks and a clock the test moves. In memory unless `file` is given.
 * @example
 * const svc = await startService();
 * const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a fox' }) });
 * await svc.clock.advance(10_000);
 * await svc.close();
 */
export async function startService(options: StartOptions = {}): Promise<StartedService> {
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
    adminToken: app.service.adminToken,
    clock: app.service.clock,
    get seeded() {
      return app.service.seeded;
    },
    emitter: app.service.emitter,
    service: app.service,
    ...helpersOf.get(app)!,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
    },
  };
}
