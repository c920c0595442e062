import { randomBytes, timingSafeEqual } from 'node:crypto';
import { base64Length, hashToken, type StoredEvent, type TokenCheck } from '../channel-types.js';
import type { AppendResult, Audience, BackendHealth, RelayStore } from '../relay-store.js';
import { packEvent, unpackEvent } from './codec.js';
import type { RedisConnection } from './connection.js';

export interface RedisRelayStoreOptions {
  connection: RedisConnection;
  /** Prefix of every key. */
  prefix: string;
  /** This process's id: its own listeners' presence is told apart from the others'. */
  process: string;
  clock: () => number;
  maxEvents: number;
  /** Base64 body bytes kept per channel. */
  maxBytes: number;
  maxAgeMs: number;
  maxChannels: number;
  maxTotalBytes: number;
}

type Reply = Array<Buffer | number>;

/**
 * The `RelayStore` on Redis, shared by every relay process with the same Redis and prefix:
 * channels, buffers, sequence numbers (a counter in Redis: never handed out twice, never going back) and
 * acknowledgements, each operation one Lua script (`scripts.ts`). The bounds are the file store's, checked
 * inside the script that appends. What Redis acknowledged is durable as Redis is configured to make it:
 * with `appendonly yes` and `appendfsync always`, on disk before the sender hears "buffered".
 */
export class RedisRelayStore implements RelayStore {
  readonly #options: RedisRelayStoreOptions;
  readonly #redis: RedisConnection;
  /** The figures `/healthz` shows while Redis is away. */
  #lastStats = { channels: 0, bufferedBytes: 0 };
  /**
   * Channels seen to exist, so the ingress's check before reading a body costs no round trip. Only a hint:
   * one deleted by another process is still refused, by `append`, after its body was read.
   */
  readonly #known = new Set<string>();

  constructor(options: RedisRelayStoreOptions) {
    this.#options = options;
    this.#redis = options.connection;
  }

  open(): Promise<void> {
    return this.#redis.open();
  }

  close(): Promise<void> {
    return this.#redis.close();
  }

  get health(): BackendHealth {
    return this.#redis.health;
  }

  async stats(): Promise<{ channels: number; bufferedBytes: number }> {
    try {
      const [channels, bufferedBytes] = (await this.#eval('STATS', '')) as [number, number];
      this.#lastStats = { channels, bufferedBytes };
    } catch {
      // Redis is away: /healthz says so, with the last figures known.
    }
    return this.#lastStats;
  }

  async create(): Promise<{ id: string; token: string } | null> {
    // 144 random bits (128 at least): an id nobody can guess.
    const id = randomBytes(18).toString('base64url');
    const token = `clt_${randomBytes(32).toString('base64url')}`;
    const created = await this.#eval('CREATE', id, hashToken(token), this.#options.clock(), this.#options.maxChannels);
    return created === 1 ? { id, token } : null;
  }

  async delete(id: string): Promise<'deleted' | 'not_found'> {
    this.#known.delete(id);
    return (await this.#eval('DELETE', id)) === 1 ? 'deleted' : 'not_found';
  }

  async check(id: string, token: string | undefined): Promise<TokenCheck> {
    const stored = await this.#redis.command((client) => client.hget(this.#key(id), 'token'));
    if (stored === null) return this.#forget(id);
    if (token === undefined) return 'invalid_token';
    return timingSafeEqual(Buffer.from(hashToken(token), 'hex'), Buffer.from(stored, 'hex')) ? 'ok' : 'invalid_token';
  }

  async has(id: string): Promise<boolean> {
    if (this.#known.has(id)) return true;
    if ((await this.#redis.command((client) => client.exists(this.#key(id)))) !== 1) return false;
    if (this.#known.size >= 100_000) this.#known.clear();
    this.#known.add(id);
    return true;
  }

  async append(id: string, event: Omit<StoredEvent, 'seq'>, local: Audience): Promise<AppendResult> {
    const { clock, maxEvents, maxBytes, maxAgeMs, maxTotalBytes, process } = this.#options;
    const reply = (await this.#eval(
      'APPEND',
      id,
      clock(),
      maxEvents,
      maxBytes,
      maxAgeMs,
      maxTotalBytes,
      base64Length(event.body),
      event.receivedAt,
      event.deliveryId === null ? '' : `=${event.deliveryId}`,
      event.eventName === null ? '' : `=${event.eventName}`,
      process,
      local,
      packEvent(event),
    )) as Reply;
    const kind = String(reply[0]);
    if (kind === 'stored') return { kind, event: { seq: reply[1] as number, ...event }, remote: reply[2] === 1 };
    if (kind === 'full') return { kind, reason: String(reply[1]) as 'channel_events' | 'channel_bytes' | 'relay_bytes' };
    if (kind === 'not_found') return { kind: this.#forget(id) };
    return { kind: 'filtered' };
  }

  async keep(): Promise<void> {
    // The script that appended it answered only once Redis had it: nothing is left to write.
  }

  async ack(id: string, seq: number): Promise<void> {
    await this.#eval('ACK', id, seq);
  }

  async unacked(id: string, wants: (event: StoredEvent) => boolean): Promise<StoredEvent[]> {
    const { clock, maxEvents, maxBytes, maxAgeMs } = this.#options;
    const reply = (await this.#eval('UNACKED', id, clock(), maxEvents, maxBytes, maxAgeMs)) as Buffer[];
    const events: StoredEvent[] = [];
    for (let i = 0; i < reply.length; i += 2) {
      const event = unpackEvent(Number(reply[i]!.toString()), reply[i + 1]!);
      if (wants(event)) events.push(event);
    }
    return events;
  }

  async find(id: string, ref: string): Promise<StoredEvent | undefined> {
    const reply = (await this.#eval('FIND', id, ref)) as Buffer[] | null;
    return reply ? unpackEvent(Number(reply[0]!.toString()), reply[1]!) : undefined;
  }

  #forget(id: string): 'not_found' {
    this.#known.delete(id);
    return 'not_found';
  }

  #eval(name: Parameters<RedisConnection['eval']>[0], id: string, ...args: Array<string | number | Buffer>): Promise<unknown> {
    return this.#redis.eval(name, [this.#options.prefix, id, ...args]);
  }

  #key(id: string): string {
    return `${this.#options.prefix}c:${id}`;
  }
}
