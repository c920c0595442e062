import type { StoredEvent } from '../channel-types.js';
import type { Scheduler } from '../heartbeat.js';
import { GONE, type Outcome } from '../pending.js';
import type { BusHandlers, RelayBus } from '../relay-bus.js';
import { RelayStoreError } from '../relay-store.js';
import { packAnswer, packLive, unpackAnswer, unpackLive } from './codec.js';
import type { RedisConnection } from './connection.js';

export interface RedisBusOptions {
  connection: RedisConnection;
  prefix: string;
  /** This process's id, random per start: where answers to the events it publishes come back. */
  process: string;
  scheduler: Scheduler;
  log: (message: string) => void;
  /** How long a process's announced listeners count without being announced again. @default 30_000 */
  presenceTtlMs?: number;
}

/** A channel with listeners here: how many per filter, and the subscription to its live events. */
interface Watched {
  filters: Map<string, number>;
  subscribed: Promise<unknown> | null;
}

/**
 * The relay processes of one Redis talking to each other over pub/sub. Each process subscribes
 * to `ev:<channel>` for the channels it has listeners of, and to `re:<its id>` for the answers to the
 * events it published; `ctl` carries deletions. Listeners are announced in the channel's `:who` set with
 * an expiry renewed every third of it, so the listeners of a process that died stop counting by themselves
 * (and sooner for a publisher: a dead process's subscriptions end with its connection).
 */
export class RedisBus implements RelayBus {
  readonly #options: RedisBusOptions;
  readonly #redis: RedisConnection;
  readonly #watched = new Map<string, Watched>();
  readonly #ttlMs: number;
  #handlers: BusHandlers | null = null;
  #timer: unknown = null;

  constructor(options: RedisBusOptions) {
    this.#options = options;
    this.#redis = options.connection;
    this.#ttlMs = options.presenceTtlMs ?? 30_000;
  }

  async open(handlers: BusHandlers): Promise<void> {
    this.#handlers = handlers;
    const { subscriber } = this.#redis;
    subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) => this.#message(channel.toString(), message));
    await subscriber.subscribe(this.#name(`re:${this.#options.process}`), this.#name('ctl'));
    this.#timer = this.#options.scheduler.setInterval(() => this.#renew(), Math.floor(this.#ttlMs / 3));
    this.#redis.onRecovered(() => {
      this.#renew();
      handlers.recovered();
    });
  }

  async close(): Promise<void> {
    this.#options.scheduler.clearInterval(this.#timer);
    const leaving = [...this.#watched].map(([channelId, watched]) => this.#announce(channelId, [], [...watched.filters.keys()]).catch(() => undefined));
    this.#watched.clear();
    await Promise.all(leaving);
  }

  watch(channelId: string, filter: string): Promise<void> {
    let watched = this.#watched.get(channelId);
    if (!watched) this.#watched.set(channelId, (watched = { filters: new Map(), subscribed: null }));
    watched.filters.set(filter, (watched.filters.get(filter) ?? 0) + 1);
    const entry = watched;
    if (!entry.subscribed) {
      entry.subscribed = this.#subscribe(channelId).catch((error: unknown) => {
        entry.subscribed = null; // the next listener tries again
        throw error;
      });
    }
    // Announced again by every new listener: one whose announcement failed may have been the first.
    return Promise.all([entry.subscribed, this.#announce(channelId, [filter], [])]).then(() => undefined);
  }

  unwatch(channelId: string, filter: string): void {
    const watched = this.#watched.get(channelId);
    const count = watched?.filters.get(filter);
    if (!watched || count === undefined) return;
    if (count > 1) return void watched.filters.set(filter, count - 1);
    watched.filters.delete(filter);
    this.#announce(channelId, [], [filter]).catch(() => undefined); // else it expires by itself
    if (watched.filters.size > 0) return;
    this.#watched.delete(channelId);
    if (this.#redis.subscriber.status === 'ready') this.#redis.subscriber.unsubscribe(this.#name(`ev:${channelId}`)).catch(() => undefined);
  }

  publish(channelId: string, event: StoredEvent): Promise<number> {
    return this.#redis.command((client) => client.publish(this.#name(`ev:${channelId}`), packLive(this.#options.process, event)));
  }

  answer(origin: string, channelId: string, seq: number, outcome: Outcome): void {
    // Lost with Redis: the origin answers its sender 504 when its own timer fires.
    this.#redis.command((client) => client.publish(this.#name(`re:${origin}`), packAnswer(channelId, seq, outcome))).catch((error: Error) => this.#failed(`cannot answer for event ${seq}`, error));
  }

  deleted(channelId: string): void {
    this.#redis.command((client) => client.publish(this.#name('ctl'), JSON.stringify({ deleted: channelId }))).catch((error: Error) => this.#failed(`cannot tell the other relay processes that channel ${channelId} was deleted`, error));
  }

  #subscribe(channelId: string): Promise<unknown> {
    const { subscriber } = this.#redis;
    if (subscriber.status !== 'ready') return Promise.reject(new RelayStoreError('relay_unavailable', 'The relay cannot reach its storage just now.'));
    return subscriber.subscribe(this.#name(`ev:${channelId}`));
  }

  #announce(channelId: string, add: string[], remove: string[]): Promise<unknown> {
    const member = (filter: string) => `${this.#options.process}|${filter}`;
    return this.#redis.eval('PRESENCE', [this.#options.prefix, channelId, this.#ttlMs, add.length, ...add.map(member), ...remove.map(member)]);
  }

  /** Renews the announcement of every listener here before it expires. */
  #renew(): void {
    for (const [channelId, watched] of this.#watched) this.#announce(channelId, [...watched.filters.keys()], []).catch(() => undefined);
  }

  #message(channel: string, message: Buffer): void {
    const handlers = this.#handlers!;
    const { prefix, process } = this.#options;
    try {
      if (channel === this.#name(`re:${process}`)) {
        const { channel: channelId, seq, outcome } = unpackAnswer(message);
        return handlers.answered(channelId, seq, outcome);
      }
      if (channel === this.#name('ctl')) return handlers.deleted(String((JSON.parse(message.toString()) as { deleted: unknown }).deleted));
      if (!channel.startsWith(`${prefix}ev:`)) return;
      const channelId = channel.slice(prefix.length + 3);
      const { origin, event } = unpackLive(message);
      // Our own copy: it counts among the receivers the publish reported, and nobody here takes it twice.
      if (origin === process) return handlers.answered(channelId, event.seq, GONE);
      handlers.event(origin, channelId, event);
    } catch (error) {
      this.#options.log(`unreadable message on ${channel}: ${(error as Error).message}`);
    }
  }

  #failed(what: string, error: Error): void {
    // An outage is reported once by the connection; anything else is worth a line.
    if (!(error instanceof RelayStoreError && error.code === 'relay_unavailable')) this.#options.log(`${what}: ${error.message}`);
  }

  #name(suffix: string): string {
    return `${this.#options.prefix}${suffix}`;
  }
}
