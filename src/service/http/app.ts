import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HELPER_OPERATIONS, testHelpersOf, type HelperParts, type TestHelpers } from '../testing/http/test-helpers.js';
import { problem } from '../../protocol/problem.js';
import { ROUTES, type RouteSpec } from '../contract/routes.js';
import { AssistantEndpoint } from '../assistant/endpoint.js';
import { isOAuthPath } from '../assistant/oauth/paths.js';
import { Service, type ServiceOptions } from '../service.js';
import { linkedSteps, routeSteps } from './deps.js';
import { operationRunner, type Command } from '../runner/call.js';
import { faults, journal } from '../testing/steps.js';
import { ServiceRouter } from './dispatch.js';
import { extraRoutes, type ServicePages } from './extras.js';
import { handlers, type Handlers } from './operations.js';
import { routeRunner, type Handler } from './pipeline.js';
import { sendProblem } from './respond.js';
import type { Caller } from '../core/gate.js';

/**
 * The assistant endpoint as an app sees it. Issue 29 item 15: the published declarations name no
 * OAuth-server, Koa or MCP SDK type, so the endpoint's own class stays internal (`assistantEndpoint`).
 */
export interface ServiceAssistant {
  /** Ends its connections and its authorization server; `close()` of the app does it too. */
  close(): Promise<void>;
}

/** The service as a Node request listener: `http.createServer(app)`, supertest's `request(app)`, or `expressApp.use(app)`. */
export interface ServiceApp {
  (req: IncomingMessage, res: ServerResponse): void;
  readonly service: Service;
  /** The assistant endpoint at `/mcp`, or `null` when it is turned off. */
  readonly assistant: ServiceAssistant | null;
  /** Every route it serves, `METHOD /path`, for the test that it and the contract agree. */
  readonly routes: readonly string[];
  /** Stops the service's timers and emitter and writes its data file. */
  close(): Promise<void>;
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

/** The in-process test helpers of each app, for startService (issue 31 item 1: they run on the app's chain). */
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
  const assistant =
    options.assistant === false ? null : new AssistantEndpoint(service, { onError: (error) => warn(`assistant endpoint: ${error.message}`), fetchClientMetadata: options.fetchClientMetadata });
  const bound = handlers(service, assistant?.settings ?? null);
  const contract = (ROUTES as readonly RouteSpec[]).map((route) => ({ route, handler: bound[route.operationId as keyof Handlers] as unknown as Handler<Caller> }));
  const now = () => service.clock.now();
  const origin = () => service.origin;
  // Issue 31 item 5: the composition root plugs the test controls (testing/steps.ts) into the chain.
  const controls = { journal: journal({ journal: service.journal, now }), faults: faults({ rules: service.faultRules, origin }) };
  const parts = { gate: service.gate, idempotency: service.idempotency, store: service.store, now, origin, warn: service.warn, report };
  const steps = routeSteps(parts, controls);
  const runRoute = routeRunner(steps);
  // Issue 31 item 1: the pages and startService()'s helpers run their operation through the same chain.
  const runOperation = operationRunner(steps);
  const commands = bound as unknown as Record<string, Command>;
  const pages: ServicePages = {
    topUp: { origin, run: runOperation, topUp: commands.topUp! },
    photoUploads: {
      origin,
      photoUploads: service.photoUploads,
      uploadsDir: service.files.uploads,
      assets: service.assets,
      callerOf: (accountId) => {
        const account = service.accounts.get(accountId);
        const keys = account ? service.accounts.keysOf(accountId) : [];
        const key = keys.find((candidate) => candidate.revokedAt === null) ?? keys[0];
        return account && key ? { account, key } : null;
      },
      run: operationRunner(linkedSteps(parts, controls)),
    },
  };
  const router = new ServiceRouter(contract, extraRoutes(service, assistant, pages), runRoute, report);
  const app = ((req, res) => service.clock.scope(() => {
    // Each request acts for nobody until its credential names an account, whose own time it then reads (issue 22).
    // The assistant's authorization server (oidc-provider) answers its own paths: /oauth/… and its metadata.
    if (assistant && isOAuthPath((req.url ?? '/').split('?', 1)[0]!)) {
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

/**
 * What `startService` resolves to: everything a user's tests need, as stripe-mock's URL and key are, and the
 * test helpers in process (`accounts`, `reset`, `seed`, `requests`, `faults`, `webhookChaos`: docs/service.md).
 */
export interface StartedService extends TestHelpers {
  /** The base URL, with `/v1`: `http://127.0.0.1:54321/v1`. */
  url: string;
  /** The origin, for `/settings` and `/test_helpers`. */
  origin: string;
  apiKey: string;
  webhookSecret: string;
  /** The test helpers' admin token (issue 22): `Authorization: Bearer <adminToken>` on /test_helpers/accounts, reset, the whole journal. */
  adminToken: string;
  clock: Service['clock'];
  /** The ids the `seed` option's fixture made, by name (issue 22); `null` without one. */
  seeded: Service['seeded'];
  service: Service;
  close(): Promise<void>;
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
    adminToken: app.service.adminToken,
    clock: app.service.clock,
    get seeded() {
      return app.service.seeded;
    },
    service: app.service,
    ...helpersOf.get(app)!,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
    },
  };
}
