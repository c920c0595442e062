import type { RedisDuplicateOptions } from '../../store/redis-client.js';
import type { Scheduler } from '../heartbeat.js';
import { RelayStoreError, type BackendHealth } from '../relay-store.js';
import type { RelayLogger, RelayRedis } from '../server-options.js';
import { SCRIPTS, type ScriptName } from './scripts.js';
import { redactRedisUrl } from '../../store/redis-url.js';

// Commands fail at once while Redis is away instead of waiting in ioredis's offline queue, so a sender is
// answered 503 relay_unavailable rather than held until it gives up by itself.
const OWN: RedisDuplicateOptions = { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true };
/** What the sender (or the caller of createChannel) reads while Redis cannot be reached: no host, no port. */
const UNAVAILABLE = 'The relay cannot reach its storage just now; nothing was kept. Retry later.';
// Replies that mean "Redis is there but cannot serve yet", not a bug in a script.
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN)\b/;

export interface RedisConnectionOptions {
  /** The caller's client (left open on close), or `null` to make our own from `url`. */
  client: RelayRedis | null;
  url: string | null;
  logger: RelayLogger;
  scheduler: Scheduler;
  clock: () => number;
  /** A command not answered within this fails with `relay_unavailable`. @default 5_000 */
  timeoutMs?: number;
  /** How long `open()` waits for Redis before it fails. @default 10_000 */
  connectTimeoutMs?: number;
}

/**
 * The relay's two connections to Redis: one for commands and one for pub/sub (a subscribed connection
 * takes no other command). ioredis is loaded here only, when the relay is given a URL. The Lua scripts are
 * loaded once and again after a Redis restart (NOSCRIPT). While Redis is away every command fails at once
 * with `relay_unavailable`; the outage and the recovery are each told once on the logger, `health` says
 * which it is for `/healthz`, and `onRecovered` callbacks run once both connections are back.
 */
export class RedisConnection {
  /** The Redis, as logs may show it: no password. */
  readonly where: string;
  readonly #options: RedisConnectionOptions;
  readonly #shas = new Map<ScriptName, string>();
  readonly #recovered: Array<() => void> = [];
  #client: RelayRedis | null = null;
  #subscriber: RelayRedis | null = null;
  #down: { error: Error; since: number } | null = null;
  #opened = false;
  #closing = false;

  constructor(options: RedisConnectionOptions) {
    this.#options = options;
    this.where = options.url ? redactRedisUrl(options.url) : `redis://${options.client!.options.host ?? 'localhost'}:${options.client!.options.port ?? 6379}`;
  }

  get subscriber(): RelayRedis {
    if (!this.#subscriber) throw new Error('The Redis connection is not open.');
    return this.#subscriber;
  }

  get health(): BackendHealth {
    if (!this.#down) return { ok: true };
    const { error, since } = this.#down;
    return { ok: false, error: (error as NodeJS.ErrnoException).code ?? 'redis_unavailable', detail: `cannot reach Redis at ${this.where}: ${error.message}`, since };
  }

  /** Called after an outage, once both connections are back (the subscriptions renewed). */
  onRecovered(callback: () => void): void {
    this.#recovered.push(callback);
  }

  async open(): Promise<void> {
    const { client: given, url, connectTimeoutMs = 10_000 } = this.#options;
    const client: RelayRedis = given ?? new (await import('ioredis')).Redis(url!, OWN);
    const subscriber = client.duplicate(OWN);
    this.#client = client;
    this.#subscriber = subscriber;
    // At start-up the first error fails open(): a relay pointed at the wrong Redis says so at once.
    let failed!: (error: Error) => void;
    const failure = new Promise<never>((_resolve, reject) => (failed = reject));
    failure.catch(() => undefined);
    for (const connection of [client, subscriber]) {
      connection.on('error', (error: Error) => {
        failed(error);
        this.#lost(error);
      });
      connection.on('close', () => this.#lost(new Error('connection closed')));
      connection.on('ready', () => this.#ready());
    }
    try {
      await this.#timed(Promise.race([Promise.all([ready(client), ready(subscriber)]), failure]), connectTimeoutMs, 'no answer');
    } catch (error) {
      await this.close();
      throw new RelayStoreError('relay_unavailable', `cannot reach Redis at ${this.where}: ${(error as Error).message}`, { cause: error });
    }
    this.#opened = true;
  }

  /** Runs one of the relay's scripts; bulk replies come back as Buffers. */
  eval(name: ScriptName, args: Array<string | number | Buffer>): Promise<unknown> {
    return this.command(async (client) => {
      let sha = this.#shas.get(name) ?? (await this.#load(client, name));
      try {
        return await client.callBuffer('EVALSHA', [sha, 0, ...args]);
      } catch (error) {
        // A restarted Redis has an empty script cache.
        if (!/^NOSCRIPT/.test((error as Error).message)) throw error;
        sha = await this.#load(client, name);
        return client.callBuffer('EVALSHA', [sha, 0, ...args]);
      }
    });
  }

  /** Runs `work` on the command connection: at once `relay_unavailable` while Redis is away, and the same if it does not answer in time. */
  async command<T>(work: (client: RelayRedis) => Promise<T>): Promise<T> {
    const client = this.#client;
    if (!client || this.#down || client.status !== 'ready') throw new RelayStoreError('relay_unavailable', UNAVAILABLE);
    try {
      return await this.#timed(work(client), this.#options.timeoutMs ?? 5_000, 'Redis did not answer in time');
    } catch (error) {
      throw translate(error);
    }
  }

  async close(): Promise<void> {
    this.#closing = true;
    const own = this.#options.client === null;
    for (const connection of own ? [this.#subscriber, this.#client] : [this.#subscriber]) {
      if (!connection) continue;
      if (connection.status === 'ready') await connection.quit().catch(() => connection.disconnect());
      else connection.disconnect();
    }
  }

  async #load(client: RelayRedis, name: ScriptName): Promise<string> {
    const sha = (await client.script('LOAD', SCRIPTS[name])) as string;
    this.#shas.set(name, sha);
    return sha;
  }

  #lost(error: Error): void {
    if (this.#closing || !this.#opened) return;
    if (this.#down) {
      // The 'close' comes first; the next 'error' says why (ECONNREFUSED…), which /healthz shows.
      if ((error as NodeJS.ErrnoException).code) this.#down.error = error;
      return;
    }
    this.#down = { error, since: this.#options.clock() };
    this.#options.logger.warn(`lost Redis at ${this.where} (${error.message}); senders get 503 relay_unavailable until it is back, and the relay reconnects by itself`);
  }

  #ready(): void {
    if (!this.#down || this.#client?.status !== 'ready' || this.#subscriber?.status !== 'ready') return;
    const seconds = Math.round((this.#options.clock() - this.#down.since) / 1000);
    this.#down = null;
    this.#options.logger.info(`Redis at ${this.where} is back after ${seconds} s; taking events again, and listeners reconnect to catch up`);
    for (const callback of this.#recovered) callback();
  }

  #timed<T>(work: Promise<T>, ms: number, why: string): Promise<T> {
    const { scheduler } = this.#options;
    return new Promise<T>((resolve, reject) => {
      const timer = scheduler.setTimeout(() => reject(new Error(why)), ms);
      work.then(
        (value) => (scheduler.clearTimeout(timer), resolve(value)),
        (error: unknown) => (scheduler.clearTimeout(timer), reject(error)),
      );
    });
  }
}

/** Resolves once `connection` is ready, connecting it first if it waits for that (lazyConnect). */
function ready(connection: RelayRedis): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  const connected = new Promise<void>((resolve) => connection.once('ready', () => resolve()));
  if (connection.status === 'wait') connection.connect().catch(() => undefined); // the 'error' event says why
  return connected;
}

/** A Redis reply error from a script is a bug (it reaches the logs as a 500); a lost or busy Redis is `relay_unavailable`. */
function translate(error: unknown): unknown {
  if (error instanceof RelayStoreError) return error;
  const message = (error as Error)?.message ?? '';
  if (/^OOM\b/.test(message)) return new RelayStoreError('relay_full', "The relay's storage is full just now; nothing was kept. Retry later.", { cause: error });
  if ((error as Error)?.name === 'ReplyError' && !TRANSIENT_REPLY.test(message)) return error;
  return new RelayStoreError('relay_unavailable', UNAVAILABLE, { cause: error });
}

