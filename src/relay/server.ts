import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { CliphookError } from '../protocol/errors.js';
import { ChannelStore } from './channels.js';
import { CLOSE, MAX_HEAD_BYTES, MAX_REPLY_BODY_BYTES } from './frames.js';
import { Heartbeat } from './heartbeat.js';
import { Hub } from './hub.js';
import { createIngress, matchIngressTarget, sendProblem, splitTarget } from './ingress.js';
import { bearer, isLoopback, refuseUpgrade, sameHash, sendJson, sendNotAllowed, sha256 } from './server-http.js';
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
// Sequence numbers reserved per write of the channel's high-water mark: one write per 1,024 events, and a
// relay restarted after a crash skips at most that many numbers, never reusing one.
const SEQ_BLOCK = 1024;
// How long listeners get to answer the closing handshake when the relay stops.
const CLOSE_GRACE_MS = 2_000;

/**
 * The relay: channels, the `/in/<channel>` ingress and the WebSocket endpoint `listen` connects to.
 * @example
 * const relay = createRelayServer({ file: '.cliphook/relay.json', publicUrl: 'https://relay.example.com', adminToken: process.env.ADMIN_TOKEN });
 * const { url } = await relay.listen(8787, '0.0.0.0');
 */
export class RelayServer {
  readonly #store: ChannelStore;
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
    const {
      file, publicUrl, adminToken, open, maxChannels, maxTotalBufferedBytes, fileIo, maxBodyBytes, responseTimeoutMs, maxBufferedEvents,
      maxBufferedBytes, maxBufferAgeMs, retryAfterSeconds, pingIntervalMs, readDeadlineMs, clock, scheduler, logger,
    } = resolveRelayOptions(options);
    this.#publicUrl = publicUrl;
    this.#adminHash = adminToken === null ? null : sha256(adminToken);
    this.#logger = logger;
    this.#open = open;
    this.#retryAfterSeconds = retryAfterSeconds;
    const log = (message: string) => logger.warn(message);
    // Frames carry request bodies one way and local replies (up to the listener's 1 MiB default) the other.
    const maxFrameBytes = Math.max(maxBodyBytes, MAX_REPLY_BODY_BYTES) + MAX_HEAD_BYTES;
    this.#store = new ChannelStore({
      file,
      clock,
      maxEvents: maxBufferedEvents,
      maxBytes: maxBufferedBytes,
      maxAgeMs: maxBufferAgeMs,
      maxChannels,
      maxTotalBytes: maxTotalBufferedBytes,
      scheduler,
      lazyCommitMs: 1000,
      seqBlock: SEQ_BLOCK,
      retryMs: retryAfterSeconds * 1000,
      log: logger,
      ...(fileIo ? { io: fileIo } : {}),
    });
    this.#heartbeat = new Heartbeat({ clock, scheduler, intervalMs: pingIntervalMs, deadlineMs: readDeadlineMs });
    this.#hub = new Hub({ store: this.#store, heartbeat: this.#heartbeat, scheduler, responseTimeoutMs, pingIntervalMs, maxFrameBytes, log });
    // A frame over maxPayload is refused by ws itself with 1009 before it is buffered whole.
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: maxFrameBytes, perMessageDeflate: false, clientTracking: false });
    this.#ingress = createIngress({ store: this.#store, hub: this.#hub, clock, maxBodyBytes, retryAfterSeconds, scheduler });
  }

  /** The base URL once listening (`http://127.0.0.1:8787`), or `null`. */
  get url(): string | null {
    return this.#url;
  }

  /** Connected listeners, across channels. */
  get listeners(): number {
    return this.#hub.listeners;
  }

  /** Loads the data file (once). `listen` and `attach` call it. */
  open(): Promise<void> {
    this.#opened ??= this.#store.open();
    return this.#opened;
  }

  /**
   * Starts an HTTP server of its own. An address other than loopback needs `adminToken` or `open: true`.
   * @example const { url } = await relay.listen(0, '127.0.0.1');
   */
  async listen(port = 8787, host = '127.0.0.1'): Promise<{ url: string }> {
    // Issue 10: a public relay without an admin token lets anyone create channels; only on purpose.
    if (!isLoopback(host) && this.#adminHash === null && !this.#open) {
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
    server.on('upgrade', (req, socket, head) => this.#upgrade(req, socket, head));
  }

  /** Stops taking listeners, closes the connected ones (1001), saves the buffer and stops the server it started. */
  async close(): Promise<void> {
    // Refuse new upgrades first: a listener told 1001 reconnects at once and must not land on this relay.
    this.#closing = true;
    const server = this.#server && this.#ownsServer ? this.#server : null;
    const stopped = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    await this.#hub.closeAll(CLOSE.goingAway, 'relay shutting down', CLOSE_GRACE_MS);
    this.#heartbeat.stop();
    await this.#store.close().catch((error: Error) => this.#logger.warn(`cannot save the data file on close: ${error.message}`));
    server?.closeAllConnections();
    await stopped;
  }

  /**
   * Creates a channel and saves it before answering. Throws a `CliphookError` with code `relay_full`
   * at `maxChannels` or when the data file cannot be written.
   */
  async createChannel(base: string): Promise<ChannelInfo> {
    const created = this.#store.create();
    if (!created) throw new CliphookError('relay_full', 'The relay holds as many channels as it may.');
    const { channel, token } = created;
    try {
      await this.#store.commit();
    } catch (error) {
      this.#store.delete(channel.id);
      throw new CliphookError('relay_full', 'The relay cannot write its data file just now.', { cause: error });
    }
    this.#logger.info(`channel ${channel.id} created`);
    return { channel: channel.id, url: `${this.#publicUrl ?? base}/in/${channel.id}`, token };
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
        if (!(error instanceof CliphookError && error.code === 'relay_full')) throw error;
        return sendProblem(res, 'relay_full', { detail: error.message, retryAfter: this.#retryAfterSeconds });
      }
      return sendJson(res, 201, info);
    }
    const match = CHANNEL_PATH.exec(url.pathname);
    if (match) {
      if (req.method !== 'DELETE') return sendNotAllowed(res, 'DELETE');
      const id = match[1]!;
      const check = this.#store.check(id, bearer(req));
      if (check !== 'ok') return sendProblem(res, check, { detail: check === 'not_found' ? 'No such channel.' : 'Wrong token for this channel.' });
      this.#store.delete(id);
      this.#hub.closeChannel(id, CLOSE.channelGone, 'channel deleted');
      // Deleted in memory at once; on disk once a write succeeds (it is retried by itself).
      if (!(await this.#store.commit().then(() => true, () => false))) {
        return sendProblem(res, 'relay_full', { detail: 'The channel is deleted, but the relay cannot write its data file just now.', retryAfter: this.#retryAfterSeconds });
      }
      res.writeHead(204);
      res.end();
      return;
    }
    sendProblem(res, 'not_found', { detail: `Nothing at ${url.pathname}.` });
  }

  /** 200 while the data file takes writes; 503 saying why while it does not (issue 10), so a monitor notices. */
  #health(res: ServerResponse): void {
    const health = this.#store.health;
    const persistence = health.ok
      ? { ok: true }
      : { ok: false, error: (health.error as NodeJS.ErrnoException).code ?? 'write_failed', detail: `cannot write the data file: ${health.error.message}`, since: new Date(health.since).toISOString() };
    const body = { status: health.ok ? 'ok' : 'failing', channels: this.#store.size, listeners: this.#hub.listeners, bufferedBytes: this.#store.totalBytes, persistence };
    sendJson(res, health.ok ? 200 : 503, body);
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    if (this.#closing) return void socket.destroy();
    const url = new URL(req.url ?? '/', 'http://relay.invalid');
    const match = LISTEN_PATH.exec(url.pathname);
    const channelId = match?.[1];
    const check = channelId === undefined ? 'not_found' : this.#store.check(channelId, bearer(req));
    if (check !== 'ok') {
      // Refused before the upgrade, as an HTTP status the listener can tell apart from a network failure.
      return refuseUpgrade(socket, check, check === 'not_found' ? 'No such channel.' : 'Wrong token for this channel.');
    }
    const channel = this.#store.get(channelId!)!;
    const filter = url.searchParams.get('events');
    const events = filter ? new Set(filter.split(',').map((name) => name.trim()).filter(Boolean)) : null;
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#hub.connect(channel, ws, events, socket));
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
