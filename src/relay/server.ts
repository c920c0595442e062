import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { CliphookError } from '../protocol/errors.js';
import { backend } from './backend.js';
import type { TokenCheck } from './channel-types.js';
import { CLOSE, MAX_HEAD_BYTES, MAX_REPLY_BODY_BYTES } from './frames.js';
import { Heartbeat } from './heartbeat.js';
import { Hub } from './hub.js';
import { createIngress, matchIngressTarget, sendProblem, splitTarget } from './ingress.js';
import type { RelayBus } from './relay-bus.js';
import { RelayStoreError, type RelayStore } from './relay-store.js';
import { isLoopbackHost } from '../http/loopback.js';
import { bearer, refuseUpgrade, sameHash, sendJson, sendNotAllowed, sha256 } from './server-http.js';
import { resolveRelayOptions, type RelayLogger, type RelayServerOptions } from './server-options.js';

export type { RelayLogger, RelayServerOptions } from './server-options.js';

/** What `POST /channels` returns. */
export interface ChannelInfo {
  /** The channel id: 144 random bits, base64url. */
  channel: string;
  /** The URL to give the sender as `callback_url`. */
  url: string;
  /** The listening token; shown once, stored only as a hash. */
  token: string;
}

const LISTEN_PATH = /^\/channels\/([A-Za-z0-9_-]+)\/listen$/;
const CHANNEL_PATH = /^\/channels\/([A-Za-z0-9_-]+)$/;
// How long listeners get to answer the closing handshake when the relay stops.
const CLOSE_GRACE_MS = 2_000;

/**
 * The relay: channels, the `/in/<channel>` ingress and the WebSocket endpoint `listen` connects to.
 * @example
 * const relay = createRelayServer({ file: '.cliphook/relay.json', publicUrl: 'https://relay.example.com', adminToken: process.env.ADMIN_TOKEN });
 * const { url } = await relay.listen(8787, '0.0.0.0');
 */
export class RelayServer {
  readonly #store: RelayStore;
  readonly #bus: RelayBus | null;
  readonly #hub: Hub;
  readonly #heartbeat: Heartbeat;
  readonly #wss: WebSocketServer;
  readonly #ingress: ReturnType<typeof createIngress>;
  readonly #publicUrl: string | null;
  readonly #adminHash: Buffer | null;
  readonly #logger: RelayLogger;
  readonly #open: boolean;
  readonly #retryAfterSeconds: number;
  #opened: Promise<void> | null = null;
  #server: Server | null = null;
  #ownsServer = false;
  #closing = false;
  #url: string | null = null;

  constructor(options: RelayServerOptions = {}) {
    const resolved = resolveRelayOptions(options);
    const { publicUrl, adminToken, open, maxBodyBytes, responseTimeoutMs, retryAfterSeconds, pingIntervalMs, readDeadlineMs, clock, scheduler, logger } = resolved;
    this.#publicUrl = publicUrl;
    this.#adminHash = adminToken === null ? null : sha256(adminToken);
    this.#logger = logger;
    this.#open = open;
    this.#retryAfterSeconds = retryAfterSeconds;
    const log = (message: string) => logger.warn(message);
    // Frames carry request bodies one way and local replies (up to the listener's 1 MiB default) the other.
    const maxFrameBytes = Math.max(maxBodyBytes, MAX_REPLY_BODY_BYTES) + MAX_HEAD_BYTES;
    ({ store: this.#store, bus: this.#bus } = backend(resolved));
    this.#heartbeat = new Heartbeat({ clock, scheduler, intervalMs: pingIntervalMs, deadlineMs: readDeadlineMs });
    this.#hub = new Hub({ store: this.#store, bus: this.#bus, heartbeat: this.#heartbeat, scheduler, responseTimeoutMs, pingIntervalMs, maxFrameBytes, log });
    // A frame over maxPayload is refused by ws itself with 1009 before it is buffered whole.
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: maxFrameBytes, perMessageDeflate: false, clientTracking: false });
    this.#ingress = createIngress({ store: this.#store, hub: this.#hub, clock, maxBodyBytes, retryAfterSeconds, scheduler });
  }

  /** The base URL once listening (`http://127.0.0.1:8787`), or `null`. */
  get url(): string | null {
    return this.#url;
  }

  /** Listeners connected to this process, across channels. */
  get listeners(): number {
    return this.#hub.listeners;
  }

  /** Loads the data file, or connects to Redis (once). `listen` and `attach` call it. */
  open(): Promise<void> {
    this.#opened ??= this.#store.open().then(() => this.#bus?.open(this.#hub.busHandlers));
    return this.#opened;
  }

  /**
   * Starts an HTTP server of its own. An address other than loopback needs `adminToken` or `open: true`.
   * @example const { url } = await relay.listen(0, '127.0.0.1');
   */
  async listen(port = 8787, host = '127.0.0.1'): Promise<{ url: string }> {
    // A public relay without an admin token lets anyone create channels; only on purpose.
    if (!isLoopbackHost(host) && this.#adminHash === null && !this.#open) {
      throw new TypeError(`Refusing to listen on ${host} without \`adminToken\`: anyone who reaches it could create channels. Set \`adminToken\`, or \`open: true\` to run an open relay on purpose.`);
    }
    const server = createServer();
    this.#ownsServer = true;
    await this.attach(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.#url = `http://${shown}:${address.port}`;
    return { url: this.#url };
  }

  /** Serves on an existing HTTP server: its requests and its WebSocket upgrades. */
  async attach(server: Server): Promise<void> {
    await this.open();
    this.#server = server;
    server.on('request', (req, res) => {
      this.#route(req, res).catch((error: Error) => {
        this.#logger.warn(`request failed: ${error.stack ?? error.message}`);
        sendProblem(res, 'internal_error', {});
      });
    });
    server.on('upgrade', (req, socket, head) => {
      this.#upgrade(req, socket, head).catch((error: Error) => {
        this.#logger.warn(`upgrade failed: ${error.stack ?? error.message}`);
        socket.destroy();
      });
    });
  }

  /** Stops taking listeners, closes the connected ones (1001), saves the buffer (or lets go of Redis) and stops the server it started. */
  async close(): Promise<void> {
    // Refuse new upgrades first: a listener told 1001 reconnects at once and must not land on this relay.
    this.#closing = true;
    const server = this.#server && this.#ownsServer ? this.#server : null;
    const stopped = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    await this.#hub.closeAll(CLOSE.goingAway, 'relay shutting down', CLOSE_GRACE_MS);
    this.#heartbeat.stop();
    await this.#bus?.close().catch((error: Error) => this.#logger.warn(`cannot withdraw the listeners from Redis on close: ${error.message}`));
    await this.#store.close().catch((error: Error) => this.#logger.warn(`cannot save the data file on close: ${error.message}`));
    server?.closeAllConnections();
    await stopped;
  }

  /**
   * Creates a channel and saves it before answering. Throws a `CliphookError` with code `relay_full` at
   * `maxChannels` or when the data file cannot be written, and `relay_unavailable` while Redis cannot be reached.
   */
  async createChannel(base: string): Promise<ChannelInfo> {
    const created = await this.#store.create();
    if (!created) throw new CliphookError('relay_full', 'The relay holds as many channels as it may.');
    this.#logger.info(`channel ${created.id} created`);
    return { channel: created.id, url: `${this.#publicUrl ?? base}/in/${created.id}`, token: created.token };
  }

  /**
   * Whether this relay holds `channel` and `token` is its listening token: `'ok'`, `'not_found'` or
   * `'invalid_token'`. A program that keeps a channel across runs checks it before using it again.
   * @example if ((await relay.checkChannel(saved.channel, saved.token)) !== 'ok') saved = await relay.createChannel(url);
   */
  async checkChannel(channel: string, token: string): Promise<TokenCheck> {
    await this.open();
    return this.#store.check(channel, token);
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    const exact = matchIngressTarget(target);
    if (exact) return this.#ingress(req, res, exact, exact.query);
    const url = splitTarget(target);
    req.resume(); // no other route reads a body
    if (url.pathname === '/healthz') return this.#health(res);
    if (url.pathname === '/channels') {
      if (req.method !== 'POST') return sendNotAllowed(res, 'POST');
      if (this.#adminHash && !sameHash(this.#adminHash, bearer(req))) {
        return sendProblem(res, 'invalid_token', { detail: 'Creating a channel on this relay needs its admin token.' });
      }
      const base = `http://${req.headers.host ?? 'localhost'}`;
      let info: ChannelInfo;
      try {
        info = await this.createChannel(base);
      } catch (error) {
        if (!(error instanceof CliphookError && (error.code === 'relay_full' || error.code === 'relay_unavailable'))) throw error;
        return sendProblem(res, error.code, { detail: error.message, retryAfter: this.#retryAfterSeconds });
      }
      return sendJson(res, 201, info);
    }
    const match = CHANNEL_PATH.exec(url.pathname);
    if (match) {
      if (req.method !== 'DELETE') return sendNotAllowed(res, 'DELETE');
      return this.#delete(res, match[1]!, bearer(req));
    }
    sendProblem(res, 'not_found', { detail: `Nothing at ${url.pathname}.` });
  }

  async #delete(res: ServerResponse, id: string, token: string | undefined): Promise<void> {
    let outcome;
    try {
      const check = await this.#store.check(id, token);
      if (check !== 'ok') return sendProblem(res, check, { detail: check === 'not_found' ? 'No such channel.' : 'Wrong token for this channel.' });
      outcome = await this.#store.delete(id);
    } catch (error) {
      if (!(error instanceof RelayStoreError)) throw error;
      return sendProblem(res, error.code, { detail: error.message, retryAfter: this.#retryAfterSeconds });
    }
    if (outcome === 'not_found') return sendProblem(res, 'not_found', { detail: 'No such channel.' });
    this.#hub.closeChannel(id, CLOSE.channelGone, 'channel deleted');
    this.#bus?.deleted(id);
    if (outcome === 'unsaved') {
      return sendProblem(res, 'relay_full', { detail: 'The channel is deleted, but the relay cannot write its data file just now.', retryAfter: this.#retryAfterSeconds });
    }
    res.writeHead(204);
    res.end();
  }

  /** 200 while the data file (or Redis) takes writes; 503 saying why while it does not, so a monitor notices. */
  async #health(res: ServerResponse): Promise<void> {
    const health = this.#store.health;
    const persistence = health.ok ? { ok: true } : { ok: false, error: health.error, detail: health.detail, since: new Date(health.since).toISOString() };
    const { channels, bufferedBytes } = await this.#store.stats();
    const body = { status: health.ok ? 'ok' : 'failing', channels, listeners: this.#hub.listeners, bufferedBytes, persistence };
    sendJson(res, health.ok ? 200 : 503, body);
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    if (this.#closing) return void socket.destroy();
    const url = new URL(req.url ?? '/', 'http://relay.invalid');
    const channelId = LISTEN_PATH.exec(url.pathname)?.[1];
    let check;
    try {
      check = channelId === undefined ? 'not_found' : await this.#store.check(channelId, bearer(req));
    } catch (error) {
      if (!(error instanceof RelayStoreError)) throw error;
      // A status the listener takes for a passing failure: it retries with backoff.
      return refuseUpgrade(socket, error.code, error.message);
    }
    if (check !== 'ok') {
      // Refused before the upgrade, as an HTTP status the listener can tell apart from a network failure.
      return refuseUpgrade(socket, check, check === 'not_found' ? 'No such channel.' : 'Wrong token for this channel.');
    }
    const filter = url.searchParams.get('events');
    const events = filter ? new Set(filter.split(',').map((name) => name.trim()).filter(Boolean)) : null;
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#hub.connect(channelId!, ws, events, socket));
  }
}

/**
 * Creates a relay server. Options are checked here; a bad one throws a TypeError naming it.
 * @example
 * const relay = createRelayServer({ file: false });
 * const { url } = await relay.listen(0, '127.0.0.1');
 */
export function createRelayServer(options: RelayServerOptions = {}): RelayServer {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected `options` to be an object.');
  return new RelayServer(options);
}
