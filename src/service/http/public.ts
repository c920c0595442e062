import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebhookEmitter } from '../../emitter/index.js';
import type { SimulatedClock } from '../core/clock.js';
import type { ServiceOptions } from '../options.js';
import type { SeedResult } from '../testing/contract/helper-types.js';
import type { TestHelpers } from '../testing/http/test-helpers.js';

// The types `cliphook/service` publishes for createServiceApp and startService. They name
// no `Service` (the internal composition root, with its stores and state machines): http/app.ts extends
// them with it for the CLI and the service's own tests.

/**
 * The assistant endpoint as an app sees it. The published declarations name no
 * OAuth-server, Koa or MCP SDK type, so the endpoint's own class stays internal (`assistantEndpoint`).
 */
export interface ServiceAssistant {
  /** Ends its connections and its authorization server; `close()` of the app does it too. */
  close(): Promise<void>;
}

/** The service as a Node request listener: `http.createServer(app)`, supertest's `request(app)`, or `expressApp.use(app)`. */
export interface ServiceApp {
  (req: IncomingMessage, res: ServerResponse): void;
  /** The assistant endpoint at `/mcp`, or `null` when it is turned off. */
  readonly assistant: ServiceAssistant | null;
  /** Every route it serves, `METHOD /path`, for the test that it and the contract agree. */
  readonly routes: readonly string[];
  /** Stops the service's timers and emitter and writes its data file. */
  close(): Promise<void>;
}

/** What `createServiceApp` takes: the service's options, and whether the assistant endpoint is on. */
export type AppOptions = ServiceOptions & {
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

/** What `startService` takes: the app's options, and where it listens. */
export type StartOptions = AppOptions & {
  /** @default 0 (a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
};

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
  /**
   * The test helpers' admin token: `Authorization: Bearer <adminToken>` on /test_helpers/accounts, reset,
   * the whole journal.
   */
  adminToken: string;
  /** The simulated clock every time rule reads: `advance()` it instead of waiting. */
  clock: SimulatedClock;
  /** The ids the `seed` option's fixture made, by name; `null` without one. */
  readonly seeded: SeedResult | null;
  /** The emitter that sends the clips' webhooks: its deliveries (`list`, `get`, `redeliver`), as `cliphook deliveries` shows them. */
  emitter: WebhookEmitter;
  close(): Promise<void>;
}
