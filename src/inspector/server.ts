import { readdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DeliveryState } from '../emitter/types.js';
import { readBody } from '../http/read-body.js';
import { problem, problemHeaders, type ProblemCode } from '../protocol/problem.js';
import { packageRoot } from '../version.js';
import { EventStream } from './event-stream.js';
import { OUTCOMES, type Outcome } from './exchanges.js';
import { allowedHosts, checkHost, checkWrite } from './guard.js';
import { ReplayError, type ListenRecorder, type ReplayEdits } from './listen-recorder.js';
import type { ServiceFeed } from './service-feed.js';

export interface InspectorOptions {
  /** The port on 127.0.0.1; 0 picks a free one. @default 0 */
  port?: number;
  /** The listen side: events forwarded to the local app, and Replay. */
  listen?: ListenRecorder;
  /** The service side: clips, image jobs, the emitter's deliveries, and Redeliver. */
  service?: ServiceFeed;
}

export interface Inspector {
  /** `http://127.0.0.1:<port>/` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The types of the page's files (its script is a few ES modules, its style one sheet). */
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
const PAGES = new Set(['/', '/listen', '/service']);
const DELIVERY_STATES: readonly string[] = ['pending', 'delivering', 'delivered', 'failed'];
const MAX_WRITE_BYTES = 2 * 1024 * 1024;

// No inline script or style, nothing from elsewhere: what the page shows (webhook bodies) cannot run.
const PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/**
 * Starts the inspector: the page, its JSON API and its server-sent events, on 127.0.0.1 only. Every
 * request must name a loopback host with this port (DNS rebinding); writes must come from the page.
 * @example
 * const inspector = await startInspector({ port: 0, listen: recorder });
 * console.log(`Inspector: ${inspector.url}`);
 */
export async function startInspector({ port = 0, listen, service }: InspectorOptions): Promise<Inspector> {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`Expected \`port\` to be 0-65535, got ${port}.`);
  if (!listen && !service) throw new TypeError('Expected `listen`, `service` or both.');
  // The page's files ship in the package (`files` has `templates`), so the page works from `dist` and
  // offline; read once, and only these are served (`/assets/<name>`).
  const dir = new URL('templates/inspector/', packageRoot);
  const page = await readFile(new URL('index.html', dir));
  const assets = new Map<string, { bytes: Buffer; type: string }>();
  for (const name of await readdir(dir)) {
    const type = TYPES[/\.\w+$/.exec(name)?.[0] ?? ''];
    if (type) assets.set(`/assets/${name}`, { bytes: await readFile(new URL(name, dir)), type });
  }

  const onExchange = (summary: unknown, oldest: number | null) => stream.send('exchange', { summary, oldest });
  // Listened to only while a page is open: with none, listen makes no row for each event, off its hot path.
  const stream = new EventStream({ onWatch: (watching) => (watching ? listen?.on('exchange', onExchange) : listen?.off('exchange', onExchange)) });
  const serviceEvents = (['delivery', 'clip', 'image'] as const).map((name) => {
    const handler = (summary: unknown) => stream.send(name, { summary, now: service!.now() });
    service?.on(name, handler);
    return () => service?.off(name, handler);
  });

  let hosts: ReadonlySet<string> = new Set();
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, problemBody('internal_error', `The inspector failed: ${(error as Error).message}`));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refused = checkHost(req, hosts);
    if (refused) return void (req.resume(), send(res, 403, problemBody(refused.code, refused.detail)));
    const url = new URL(req.url ?? '/', 'http://inspector');
    const path = url.pathname;
    if (req.method === 'POST') {
      const write = checkWrite(req, hosts);
      if (write) return void (req.resume(), send(res, write.code === 'unsupported_media_type' ? 415 : 403, problemBody(write.code, write.detail)));
      return post(req, res, path);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      req.resume();
      return void send(res, 405, problemBody('method_not_allowed', 'The inspector takes GET, and POST for replay and redeliver.'), { allow: 'GET, HEAD, POST' });
    }
    if (PAGES.has(path)) return void sendBytes(res, page, 'text/html; charset=utf-8', PAGE_HEADERS);
    const asset = assets.get(path);
    if (asset) return void sendBytes(res, asset.bytes, asset.type, PAGE_HEADERS);
    if (path === '/favicon.ico') return void res.writeHead(204).end();
    // The API is the page's own: a browser says when another site asks (a no-cors fetch from a page that
    // found the port could otherwise hold every stream slot). Tools that send no Sec-Fetch-Site pass.
    const site = req.headers['sec-fetch-site'];
    if (path.startsWith('/api/') && site !== undefined && site !== 'same-origin' && site !== 'none') {
      return void send(res, 403, problemBody('origin_not_allowed', 'The inspector API answers its own page only.'));
    }
    if (path === '/api/info') return void send(res, 200, info());
    if (path === '/api/stream' && req.method === 'HEAD') {
      return void res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' }).end();
    }
    if (path === '/api/stream') {
      if (!stream.open(req, res, info())) send(res, 503, problemBody('upstream_busy', 'Too many inspector pages are open; close one.', 5));
      return;
    }
    if (listen && path === '/api/listen/exchanges') {
      const event = url.searchParams.get('event') ?? undefined;
      const outcome = url.searchParams.get('status') ?? undefined;
      if (outcome !== undefined && !(OUTCOMES as readonly string[]).includes(outcome)) return void send(res, 400, problemBody('invalid_parameter', `status is one of ${OUTCOMES.join(', ')}.`));
      return void send(res, 200, { items: listen.list({ event, outcome: outcome as Outcome | undefined }), oldest: listen.oldest });
    }
    const exchange = listen && /^\/api\/listen\/exchanges\/(\d{1,15})$/.exec(path);
    if (listen && exchange) {
      const detail = listen.detail(Number(exchange[1]));
      return void (detail ? send(res, 200, detail) : send(res, 404, problemBody('not_found', `No exchange ${exchange[1]}.`)));
    }
    if (service && path === '/api/service/deliveries') {
      const state = url.searchParams.get('state') ?? undefined;
      if (state !== undefined && !DELIVERY_STATES.includes(state)) return void send(res, 400, problemBody('invalid_parameter', `state is one of ${DELIVERY_STATES.join(', ')}.`));
      return void send(res, 200, { items: service.deliveries(state ? { state: state as DeliveryState } : {}), now: service.now() });
    }
    const delivery = service && /^\/api\/service\/deliveries\/([\w-]{1,100})$/.exec(path);
    if (service && delivery) {
      const detail = service.delivery(delivery[1]!);
      return void (detail ? send(res, 200, { ...detail, now: service.now() }) : send(res, 404, problemBody('not_found', `No delivery ${delivery[1]}.`)));
    }
    if (service && path === '/api/service/clips') return void send(res, 200, { items: service.clips(), now: service.now() });
    if (service && path === '/api/service/images') return void send(res, 200, { items: service.images(), now: service.now() });
    send(res, 404, problemBody('not_found', `Nothing at ${path}.`));
  }

  async function post(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = await readJson(req);
    if (body === undefined) return void send(res, 400, problemBody('invalid_json', 'The body is not a JSON object.'));
    const replay = listen && /^\/api\/listen\/exchanges\/(\d{1,15})\/replay$/.exec(path);
    if (listen && replay) {
      const edits = body.edits as ReplayEdits | undefined | null;
      if (edits !== undefined && edits !== null && typeof edits !== 'object') return void send(res, 400, problemBody('invalid_parameter', 'edits is an object: { body?, freshDeliveredAt? }.'));
      try {
        return void send(res, 201, await listen.replay(Number(replay[1]), edits ?? undefined));
      } catch (error) {
        if (!(error instanceof ReplayError)) throw error;
        return void send(res, error.code === 'not_found' ? 404 : error.code === 'replay_unavailable' ? 409 : 400, problemBody(error.code, error.message));
      }
    }
    const redeliver = service && /^\/api\/service\/deliveries\/([\w-]{1,100})\/redeliver$/.exec(path);
    if (service && redeliver) {
      const summary = await service.redeliver(redeliver[1]!);
      return void (summary ? send(res, 202, summary) : send(res, 404, problemBody('not_found', `No delivery ${redeliver[1]}.`)));
    }
    send(res, 404, problemBody('not_found', `Nothing to POST at ${path}.`));
  }

  function info() {
    return { pages: [...(listen ? ['listen'] : []), ...(service ? ['service'] : [])], listen: listen?.info() ?? null, service: service?.info() ?? null };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  hosts = allowedHosts(bound);
  return {
    url: `http://127.0.0.1:${bound}/`,
    port: bound,
    close: async () => {
      listen?.off('exchange', onExchange);
      for (const undo of serviceEvents) undo();
      stream.close();
      await closeServer(server);
    },
  };
}

function problemBody(code: ProblemCode, detail: string, retryAfter?: number) {
  return problem(code, { detail, ...(retryAfter === undefined ? {} : { retryAfter }) });
}

function send(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const isProblem = status >= 400 && typeof body === 'object' && body !== null && 'code' in body && 'trace_id' in body;
  const headers = isProblem ? problemHeaders(body as ReturnType<typeof problem>) : { 'content-type': 'application/json; charset=utf-8' };
  sendBytes(res, Buffer.from(JSON.stringify(body)), headers['content-type']!, { ...headers, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...extra }, status);
}

function sendBytes(res: ServerResponse, bytes: Buffer, type: string, headers: Record<string, string>, status = 200): void {
  res.writeHead(status, { ...headers, 'content-type': type, 'content-length': String(bytes.length) });
  res.end(res.req.method === 'HEAD' ? undefined : bytes);
}

/** The request's JSON object body (`{}` when empty), or `undefined` when it is not one. */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readBody(req, MAX_WRITE_BYTES, Number(req.headers['content-length'] ?? Number.NaN));
  } catch {
    return undefined;
  }
  if (bytes.length === 0) return {};
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
