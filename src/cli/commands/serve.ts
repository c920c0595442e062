import { MCP_PATH } from '../../service/assistant/endpoint.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startInspector, type Inspector } from '../../inspector/server.js';
import { ServiceFeed } from '../../inspector/service-feed.js';
import { FileLockedError } from '../../protocol/errors.js';
import { createServiceApp, type ServiceApp } from '../../service/http/app.js';
import { readFileSync } from 'node:fs';
import { checkFixture } from '../../service/testing/seed.js';
import { ExitError } from '../errors.js';
import { aborted, flagError, parsePort, stopSignal } from '../process.js';
import { isLoopbackHost } from '../../http/loopback.js';
import { redactRedisUrl } from '../../store/redis-url.js';
import { reachRedis } from '../redis-reach.js';

export interface ServeCommandOptions {
  port: string;
  host: string;
  data: string;
  speed: string;
  strict?: boolean;
  /** `--media-redirect`: good media links answer 302 to a short-lived storage link (spec 4.18). */
  mediaRedirect?: boolean;
  /** `--no-assistant` sets it to `false`: no assistant endpoint at /mcp. */
  assistant?: boolean;
  apiKey?: string;
  webhookSecret?: string;
  /** `--admin-token` (or CLIPHOOK_ADMIN_TOKEN): fix the test helpers' admin token. */
  adminToken?: string;
  balance?: string;
  publicUrl?: string;
  /** `--seed <file>`: a seed fixture made at start and at each reset. */
  seed?: string;
  json?: boolean;
  /** `--redis <url>` (or CLIPHOOK_REDIS_URL): rate limits, idempotency records and webhooks shared through Redis. */
  redis?: string;
  /** `--inspect <port>`: the inspector on 127.0.0.1 (`'0'`, the CLI's default, a free port); `false` or not given: none. */
  inspect?: string | false;
  /** `--open`: listen on a `--host` that is not loopback, on purpose. */
  open?: boolean;
}

/** What a host other than loopback exposes: the reason `--open` must be said on purpose. */
const EXPOSED = 'anyone who can reach this machine can call /test_helpers (move the clock), /settings (top up, make keys) and the OAuth registration';

/** Where the command writes, and what stops it: injectable for tests. */
export interface ServeIo {
  out(line: string): void;
  err(line: string): void;
  signal: AbortSignal;
}

const FLAGS: Record<string, string> = { adminToken: '--admin-token', apiKey: '--api-key', webhookSecret: '--webhook-secret', balance: '--balance', file: '--data', redisUrl: '--redis' };

/**
 * `cliphook serve`: the Clip and Image Generation Service, simulated, until SIGINT/SIGTERM. Prints the
 * base URL, the API key, its webhook signing secret and the balance (with `--json`, one JSON line).
 */
export async function serve(options: ServeCommandOptions, io: ServeIo = processIo()): Promise<void> {
  const port = parsePort('--port', options.port);
  // As `relay` does: a simulator's back doors face the network only when asked to.
  if (!isLoopbackHost(options.host) && !options.open) {
    throw new ExitError(`refusing to listen on ${options.host}: ${EXPOSED}; set --open to do so on purpose (in a container, say).`, 2);
  }
  const inspectPort = options.inspect === undefined || options.inspect === false ? null : parsePort('--inspect', options.inspect);
  if (options.speed !== 'fast' && options.speed !== 'realistic') throw new ExitError(`--speed is fast or realistic, got ${JSON.stringify(options.speed)}.`, 2);
  if (options.publicUrl !== undefined && !/^https?:\/\/[^/]+\/?(v1\/?)?$/.test(options.publicUrl)) {
    throw new ExitError(`--public-url is the origin clients reach the service at (http://host:port), got ${JSON.stringify(options.publicUrl)}.`, 2);
  }
  let balance: number | undefined;
  if (options.balance !== undefined) {
    if (!/^\d{1,12}$/.test(options.balance)) throw new ExitError(`--balance must be a whole number of credits, got ${JSON.stringify(options.balance)}.`, 2);
    balance = Number(options.balance);
  }
  const seed = options.seed === undefined ? undefined : readSeed(options.seed, options.strict === true);
  if (options.redis !== undefined) await reachRedis(options.redis, '--redis');
  let app: ServiceApp;
  try {
    app = await createServiceApp({
      file: options.data,
      speed: options.speed,
      strict: options.strict === true,
      mediaRedirect: options.mediaRedirect === true,
      assistant: options.assistant !== false,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      ...(options.webhookSecret ? { webhookSecret: options.webhookSecret } : {}),
      ...(options.adminToken ? { adminToken: options.adminToken } : {}),
      ...(balance === undefined ? {} : { balance }),
      ...(options.redis === undefined ? {} : { redisUrl: options.redis }),
      ...(seed === undefined ? {} : { seed: seed as never }),
      warn: (message) => io.err(`warning: ${message}`),
    });
  } catch (error) {
    if (error instanceof TypeError) throw flagError(error, FLAGS);
    if (error instanceof FileLockedError || /^cannot reach Redis/.test((error as Error).message)) throw new ExitError((error as Error).message, 1);
    throw new ExitError(`cannot open ${options.data}: ${(error as Error).message}`, 1);
  }
  const server = createServer(app);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, options.host, () => resolve());
    });
  } catch (error) {
    await app.close();
    throw new ExitError(`cannot listen on ${options.host}:${port}: ${(error as Error).message}`, 1);
  }
  const address = server.address() as AddressInfo;
  // poll_url and signed links must work for the client: a wildcard bind address is no address to call.
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  const host = wildcard ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  app.service.origin = options.publicUrl ? options.publicUrl.replace(/\/+$/, '').replace(/\/v1$/, '') : `http://${host}:${address.port}`;
  let inspector: (Inspector & { feed: ServiceFeed }) | null = null;
  if (inspectPort !== null) {
    // Its own port on 127.0.0.1 whatever --host is: the page and Redeliver never face the network (docs/inspector.md).
    const feed = new ServiceFeed(app.service);
    try {
      inspector = { ...(await startInspector({ port: inspectPort, service: feed })), feed };
    } catch (error) {
      feed.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
      throw new ExitError(`--inspect: cannot listen on 127.0.0.1:${inspectPort}: ${(error as Error).message}`, 1);
    }
  }
  const first = app.service.first();
  const info = {
    url: `${app.service.origin}/v1`,
    origin: app.service.origin,
    apiKey: first.apiKey,
    webhookSecret: first.webhookSecret,
    balance: first.balance,
    data: options.data,
    speed: options.speed,
    strict: options.strict === true,
    redis: options.redis === undefined ? null : redactRedisUrl(options.redis),
    inspector: inspector?.url ?? null,
    // The assistant endpoint (spec 5.7's {mcp_url}), or null with --no-assistant.
    mcp: app.assistant ? `${app.service.origin}${MCP_PATH}` : null,
  };
  // `admin_token`, not camelCase like its neighbours: the name docs/service.md gives it in the ready line.
  if (options.json) io.out(JSON.stringify({ type: 'ready', ...info, admin_token: app.service.adminToken }));
  else {
    io.out(`cliphook serve: the Clip and Image Generation Service, simulated (${options.speed}${options.strict ? ', strict' : ''}; data: ${options.data})`);
    io.out(`  base URL        ${info.url}`);
    io.out(`  API key         ${info.apiKey}`);
    io.out(`  webhook secret  ${info.webhookSecret}`);
    io.out(`  balance         ${info.balance} credits`);
    io.out(`  test clock      POST ${info.origin}/test_helpers/clock/advance {"seconds": N}`);
    io.out(`  admin token     ${app.service.adminToken} (test helpers: accounts; Authorization: Bearer <admin token>)`);
    if (info.mcp) io.out(`  assistant (MCP) ${info.mcp} (API key or OAuth sign-in)`);
    if (info.redis) io.out(`  shared on       ${info.redis} (rate limits, Idempotency-Keys, webhooks)`);
    if (info.inspector) io.out(`  inspector       ${info.inspector} (clips, image jobs, webhook deliveries, Redeliver)`);
    io.out('Ctrl-C to stop.');
  }
  if (!isLoopbackHost(options.host)) io.err(`warning: --open: listening on ${options.host}, so ${EXPOSED}. Use it on a network you trust.`);
  await aborted(io.signal);
  await inspector?.close();
  inspector?.feed.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await app.close();
  if (!options.json) io.out('cliphook serve stopped');
}

function processIo(): ServeIo {
  return { out: (text) => process.stdout.write(`${text}\n`), err: (text) => process.stderr.write(`${text}\n`), signal: stopSignal() };
}

/**
 * `--seed <file>`: the fixture, read and checked before anything is opened. A file that cannot be read, is
 * not JSON or breaks a rule is one line naming the member at fault (its JSON Pointer), exit 2.
 */
function readSeed(file: string, strict: boolean): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ExitError(`--seed: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`, 2);
  }
  let fixture: unknown;
  try {
    fixture = JSON.parse(text);
  } catch (error) {
    throw new ExitError(`--seed: ${file} is not JSON: ${(error as Error).message}`, 2);
  }
  const check = checkFixture(fixture, { strict });
  if (!check.ok) {
    const [first] = check.errors;
    const more = check.errors.length > 1 ? ` (and ${check.errors.length - 1} more)` : '';
    throw new ExitError(`--seed: ${file}${first!.pointer ? ` at ${first!.pointer}` : ''}: ${first!.detail}${more}`, 2);
  }
  return fixture;
}
