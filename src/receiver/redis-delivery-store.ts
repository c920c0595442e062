import { DEFAULT_RETENTION_MS, type ClaimOutcome, type DeliveryStore } from './delivery-store.js';

/** The part of an ioredis client the store uses: a Lua script per operation, one round trip each. */
export interface RedisLike {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  quit(): Promise<unknown>;
}

export interface RedisDeliveryStoreOptions {
  /** A connected ioredis client (the store does not close it), or… */
  redis?: RedisLike;
  /** …a `redis://` URL for a client of the store's own, closed by `close()`. @example 'redis://127.0.0.1:6379' */
  url?: string;
  /** Prefix of every key, so several apps can share one Redis. @default 'cliphook:deliveries:' */
  prefix?: string;
  /** How long a processed delivery is remembered. @default 86_400_000 (24 h) */
  retentionMs?: number;
  /**
   * Milliseconds since the epoch, for tests. Without it, Redis's own clock decides leases and retention,
   * so receivers on hosts whose clocks disagree still agree on them.
   */
  clock?: () => number;
}

// Keys come in pairs: KEYS[2i-1] is the processed mark of key i, KEYS[2i] its claim. ARGV: now (-1: ask
// Redis), lease ms, owner, retention ms. Marks and claims also carry a PX, so Redis forgets them itself.
const NOW = `local now = tonumber(ARGV[1]) if now < 0 then local t = redis.call('TIME') now = t[1] * 1000 + math.floor(t[2] / 1000) end`;
const CLAIM = `${NOW}
local lease, owner, retention = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local busy = false
for i = 1, #KEYS, 2 do
  local at = redis.call('GET', KEYS[i])
  if at and tonumber(at) > now - retention then return 'processed' end
  local claim = redis.call('GET', KEYS[i + 1])
  if claim and tonumber(string.match(claim, '^(%d+)|')) > now then busy = true end
end
if busy then return 'in_progress' end
for i = 1, #KEYS, 2 do redis.call('SET', KEYS[i + 1], (now + lease) .. '|' .. owner, 'PX', lease + 60000) end
return 'claimed'`;
const COMPLETE = `${NOW}
local retention = tonumber(ARGV[4])
for i = 1, #KEYS, 2 do
  redis.call('SET', KEYS[i], now, 'PX', retention + 60000)
  redis.call('DEL', KEYS[i + 1])
end
return 1`;
// Compare-and-delete: a claim another owner took over after this one's lease expired is left alone.
const RELEASE = `for i = 1, #KEYS, 2 do
  local claim = redis.call('GET', KEYS[i + 1])
  if claim and string.sub(claim, (string.find(claim, '|', 1, true) or 0) + 1) == ARGV[3] then redis.call('DEL', KEYS[i + 1]) end
end
return 1`;

/**
 * The store's own client: while Redis is away a claim fails after one reconnection attempt (the receiver
 * answers 503 store_unavailable) instead of waiting in ioredis's queue through 20 of them, and the
 * connection errors, which the failed claims already report, are not printed as unhandled.
 */
function ownClient(Redis: typeof import('ioredis').Redis, url: string): RedisLike {
  const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000) });
  client.on('error', () => undefined);
  return client as unknown as RedisLike;
}

/**
 * The `DeliveryStore` on Redis, for several receiver processes behind a load balancer: one Lua script per
 * operation (claim, complete, release), so a claim over all of a delivery's keys is atomic across every
 * process that shares the Redis, in one round trip.
 * @example createReceiver({ secret, store: new RedisDeliveryStore({ url: process.env.REDIS_URL }) })
 */
export class RedisDeliveryStore implements DeliveryStore {
  readonly #prefix: string;
  readonly #retentionMs: number;
  readonly #clock: (() => number) | undefined;
  readonly #client: Promise<RedisLike>;
  readonly #owns: boolean;
  #closed: Promise<void> | null = null;

  constructor({ redis, url, prefix = 'cliphook:deliveries:', retentionMs = DEFAULT_RETENTION_MS, clock }: RedisDeliveryStoreOptions = {}) {
    if ((redis === undefined) === (url === undefined)) throw new TypeError('Expected either `redis` (an ioredis client) or `url` (redis://…), and not both.');
    if (redis !== undefined && typeof redis?.eval !== 'function') throw new TypeError('Expected `redis` to be an ioredis client (it has no eval()).');
    if (url !== undefined && !(typeof url === 'string' && /^rediss?:\/\//.test(url))) throw new TypeError(`Expected \`url\` to be a redis:// or rediss:// URL, got ${JSON.stringify(url)}.`);
    if (!(Number.isFinite(retentionMs) && retentionMs > 0)) throw new TypeError(`Expected \`retentionMs\` to be a positive number, got ${retentionMs}.`);
    if (typeof prefix !== 'string') throw new TypeError('Expected `prefix` to be a string.');
    if (clock !== undefined && typeof clock !== 'function') throw new TypeError('Expected `clock` to be a function.');
    this.#prefix = prefix;
    this.#retentionMs = Math.round(retentionMs);
    this.#clock = clock;
    this.#owns = redis === undefined;
    // ioredis is loaded only when the store makes its own client: an app passing one needs nothing more.
    this.#client = redis ? Promise.resolve(redis) : import('ioredis').then(({ Redis }) => ownClient(Redis, url!));
    this.#client.catch(() => undefined);
  }

  async claim(keys: readonly string[], leaseMs: number, owner: string): Promise<ClaimOutcome> {
    return (await this.#run(CLAIM, keys, leaseMs, owner)) as ClaimOutcome;
  }

  async complete(keys: readonly string[]): Promise<void> {
    await this.#run(COMPLETE, keys, 0, '');
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    await this.#run(RELEASE, keys, 0, owner);
  }

  /** Closes the client the store made from `url`; a client passed in stays the caller's. */
  close(): Promise<void> {
    this.#closed ??= this.#owns ? this.#client.then((client) => client.quit()).then(() => undefined) : Promise.resolve();
    return this.#closed;
  }

  async #run(script: string, keys: readonly string[], leaseMs: number, owner: string): Promise<unknown> {
    const client = await this.#client;
    const names = keys.flatMap((key) => [`${this.#prefix}p:${key}`, `${this.#prefix}c:${key}`]);
    const now = this.#clock ? this.#clock() : -1;
    return client.eval(script, names.length, ...names, now, leaseMs, owner, this.#retentionMs);
  }
}
