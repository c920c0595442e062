import { createHash } from 'node:crypto';
import { DEFAULT_RETENTION_MS, type ClaimOutcome, type DeliveryStore } from './delivery-store.js';
import { assertRedisUrl } from '../store/redis-url.js';

/** The part of an ioredis client the store uses: a Lua script per operation, one round trip each. */
export interface RedisLike {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  /** Runs a script Redis has cached by its SHA-1: the store sends each script's text once, not per call. */
  evalsha?(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
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
   * Milliseconds since the epoch, for tests. Without it, Redis's own clock decides leases and retention (each
   * key's PX is the lease or the retention), so receivers on hosts whose clocks disagree still agree on them.
   */
  clock?: () => number;
}

// One Redis key per delivery key: `p<at>` once processed, `c<until>|<owner>` while claimed (the format of
// every earlier version), each with a PX so Redis forgets it by itself. Without an injected clock the PX
// *is* the lease or the retention, so a key that exists is valid by Redis's clock and nothing reads the
// times; with a clock (tests) the PX gets a minute more and the script compares the times with ARGV[3].
//
// The claim is on every webhook's path. A delivery has one key, and without an injected clock
// that claim is one `SET key <claim> NX PX <ms> GET` from the client (Redis >= 7.0), atomic by itself, and
// the mark one `SET key p<now> PX <retention>`: no script. CLAIM below serves several keys (a store shared
// with an older receiver, or a caller's own) and clock mode: one `SET NX PX GET` per key in one script,
// about 7 µs of Redis for two keys where the MGET-and-compare script before it took 12-15 (INFO
// commandstats, bench/redis-store.ts); plain SETs from the client would not be atomic over several keys. A key that exists undoes the keys set before it and goes the slow way, in the same
// script and round trip: the values decide, and only a claim or mark that the injected clock says has
// ended, while Redis still holds it, is taken over.
// ARGV: claim value, PX, now (clock mode only), retention ms (clock mode only).
const CLAIM = `for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2], 'GET') then
    for j = 1, i - 1 do redis.call('DEL', KEYS[j]) end
    local now = tonumber(ARGV[3])
    local busy = false
    local values = redis.call('MGET', unpack(KEYS))
    for k = 1, #KEYS do
      local v = values[k]
      if v then
        if string.byte(v) == 112 then
          if not now or tonumber(string.sub(v, 2)) > now - tonumber(ARGV[4]) then return 'processed' end
        elseif not now or tonumber(string.sub(v, 2, string.find(v, '|', 2, true) - 1)) > now then busy = true end
      end
    end
    if busy then return 'in_progress' end
    for k = 1, #KEYS do redis.call('SET', KEYS[k], ARGV[1], 'PX', ARGV[2]) end
    return 'claimed'
  end
end
return 'claimed'`;
// ARGV: now (-1: ask Redis), PX.
const COMPLETE = `local now = tonumber(ARGV[1]) if now < 0 then local t = redis.call('TIME') now = t[1] * 1000 + math.floor(t[2] / 1000) end
local mark = 'p' .. now
for i = 1, #KEYS do redis.call('SET', KEYS[i], mark, 'PX', ARGV[2]) end
return 1`;
// Compare-and-delete: a claim another owner took over after this one's lease expired is left alone. ARGV: owner.
const RELEASE = `for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v and string.byte(v) == 99 and string.sub(v, string.find(v, '|', 2, true) + 1) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1`;
// Reconciliation's cursor, a number that only moves forward, kept without expiry. ARGV: value.
const READ_MARK = `return redis.call('GET', KEYS[1])`;
const RAISE_MARK = `local v = redis.call('GET', KEYS[1])
if not v or tonumber(v) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`;
/** With an injected clock, Redis keeps keys this much longer than the clock's lease or retention, so the clock decides. */
const CLOCK_MARGIN_MS = 60_000;

/**
 * The store's own client: while Redis is away a claim fails after one reconnection attempt (the receiver
 * answers 503 store_unavailable) instead of waiting in ioredis's queue through 20 of them; a command
 * unanswered for 5 s (a half-open connection) fails rather than waiting for TCP to give up; a claim that
 * was in flight when the connection dropped fails rather than being sent again after the reconnection,
 * where it would find its own claim and answer in_progress; and the connection errors, which the failed
 * claims already report, are not printed as unhandled.
 */
function ownClient(Redis: typeof import('ioredis').Redis, url: string): RedisLike {
  const client = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 5_000, autoResendUnfulfilledCommands: false, retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000) });
  client.on('error', () => undefined);
  return client as unknown as RedisLike;
}

/**
 * The `DeliveryStore` on Redis, for several receiver processes behind a load balancer: one Lua script per
 * operation (claim, complete, release), so a claim over all of a delivery's keys is atomic across every
 * process that shares the Redis, in one round trip. A claim is one `SET … NX PX … GET` per key inside its
 * script; only when a key already exists does the script read the values (duplicate, in flight, or, with
 * an injected `clock`, ended and taken over), still in the same round trip.
 * @example createReceiver({ secret, store: new RedisDeliveryStore({ url: process.env.REDIS_URL }) })
 */
export class RedisDeliveryStore implements DeliveryStore {
  readonly #prefix: string;
  readonly #retentionMs: number;
  readonly #clock: (() => number) | undefined;
  readonly #client: Promise<RedisLike>;
  /** The client once `#client` has resolved, so later calls skip awaiting it. */
  #ready: RedisLike | null = null;
  /** The ready client's `set`, bound once; `null` when it has none. */
  #setCommand: SetCommand | null | undefined;
  readonly #owns: boolean;
  #closed: Promise<void> | null = null;

  constructor({ redis, url, prefix = 'cliphook:deliveries:', retentionMs = DEFAULT_RETENTION_MS, clock }: RedisDeliveryStoreOptions = {}) {
    if ((redis === undefined) === (url === undefined)) throw new TypeError('Expected either `redis` (an ioredis client) or `url` (redis://…), and not both.');
    if (redis !== undefined && typeof redis?.eval !== 'function') throw new TypeError('Expected `redis` to be an ioredis client (it has no eval()).');
    if (url !== undefined) assertRedisUrl(url, 'url');
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

  claim(keys: readonly string[], leaseMs: number, owner: string): Promise<ClaimOutcome> {
    // Whole milliseconds: Redis refuses a fractional PX, and the receiver's `leaseMs` may be one.
    const lease = Math.ceil(leaseMs);
    const clock = this.#clock;
    if (!clock) {
      const value = `c${Date.now() + lease}|${owner}`;
      const set = this.#set(keys);
      // A delivery has one key, and one `SET NX PX GET` is atomic by itself: no script.
      if (set) return set(this.#prefix + keys[0]!, value, 'PX', lease, 'NX', 'GET').then(claimOutcome);
      return this.#run(CLAIM, keys, value, lease) as Promise<ClaimOutcome>;
    }
    const now = clock();
    return this.#run(CLAIM, keys, `c${now + lease}|${owner}`, lease + CLOCK_MARGIN_MS, now, this.#retentionMs) as Promise<ClaimOutcome>;
  }

  async complete(keys: readonly string[]): Promise<void> {
    const clock = this.#clock;
    const set = clock ? null : this.#set(keys);
    // Without a clock nothing reads a mark's time (its PX is the retention), so this host's clock will do.
    if (set) return void (await set(this.#prefix + keys[0]!, `p${Date.now()}`, 'PX', this.#retentionMs));
    await this.#run(COMPLETE, keys, clock ? clock() : -1, clock ? this.#retentionMs + CLOCK_MARGIN_MS : this.#retentionMs);
  }

  async release(keys: readonly string[], owner: string): Promise<void> {
    await this.#run(RELEASE, keys, owner);
  }

  /**
   * A number kept beside the deliveries under `name` (the key `<prefix>mark:<name>`), without expiry:
   * `receiver.reconcile()` keeps its cursor here, shared by every process on this Redis. `null` when unset.
   */
  async readMark(name: string): Promise<number | null> {
    const value = await this.#run(READ_MARK, [`mark:${name}`]);
    return value === null || value === undefined ? null : Number(value);
  }

  /** Sets the mark `name` to `value` unless it already holds a larger one, atomically. */
  async raiseMark(name: string, value: number): Promise<void> {
    await this.#run(RAISE_MARK, [`mark:${name}`], Math.floor(value));
  }

  /** Closes the client the store made from `url`; a client passed in stays the caller's. */
  close(): Promise<void> {
    this.#closed ??= this.#owns ? this.#client.then((client) => client.quit()).then(() => undefined) : Promise.resolve();
    return this.#closed;
  }

  /** The client's `set` for a single key once the client is ready (ioredis has one; a bare `RedisLike` may not). */
  #set(keys: readonly string[]): SetCommand | null {
    if (keys.length !== 1 || this.#ready === null) return null;
    if (this.#setCommand === undefined) {
      const set = (this.#ready as RedisLike & { set?: SetCommand }).set;
      this.#setCommand = typeof set === 'function' ? set.bind(this.#ready) : null;
    }
    return this.#setCommand;
  }

  /** One EVALSHA (EVAL when Redis has not cached the script), without a promise layer of its own on the hot path. */
  #run(script: string, keys: readonly string[], ...argv: Array<string | number>): Promise<unknown> {
    const client = this.#ready;
    if (!client) return this.#client.then((ready) => ((this.#ready = ready), this.#run(script, keys, ...argv)));
    const args: Array<string | number> = [keys.length];
    for (const key of keys) args.push(this.#prefix + key);
    for (const arg of argv) args.push(arg);
    if (!client.evalsha) return client.eval(script, ...(args as [number, ...Array<string | number>]));
    return client.evalsha(sha1(script), ...(args as [number, ...Array<string | number>])).catch((error: unknown) => {
      // Not cached yet (a fresh or restarted Redis, or SCRIPT FLUSH): EVAL sends the text and caches it.
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(script, ...(args as [number, ...Array<string | number>]));
    });
  }
}

type SetCommand = (...args: Array<string | number>) => Promise<unknown>;

const shas = new Map<string, string>();
function sha1(script: string): string {
  let sha = shas.get(script);
  if (sha === undefined) shas.set(script, (sha = createHash('sha1').update(script).digest('hex')));
  return sha;
}

/** What `SET key <claim> NX PX <ms> GET` answered: nothing there (claimed), a mark (`p…`), or another claim (`c…`). */
function claimOutcome(previous: unknown): ClaimOutcome {
  if (previous === null || previous === undefined) return 'claimed';
  return String(previous).startsWith('p') ? 'processed' : 'in_progress';
}
