import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ChannelFile } from './channel-file.js';
import { base64Length, hashToken, indexOfSeq, type AppendRefusal, type Channel, type ChannelStoreOptions, type StoreHealth, type StoredEvent, type TokenCheck } from './channel-types.js';
import type { Scheduler } from './heartbeat.js';

export type { AppendRefusal, Channel, ChannelStoreOptions, StoreHealth, StoredEvent, TokenCheck } from './channel-types.js';

/**
 * The relay's channels and their event buffers, in memory, with every change appended as one line to
 * the data file (`ChannelFile`) by group commit. The file is locked to one process while open.
 */
export class ChannelStore {
  readonly #channels = new Map<string, Channel>();
  readonly #file: ChannelFile | null;
  readonly #clock: () => number;
  readonly #maxEvents: number;
  readonly #maxAgeMs: number;
  readonly #maxBytes: number;
  /** Base64 body bytes per channel; derived, so not persisted. */
  readonly #bytes = new WeakMap<Channel, number>();
  /** Derived, so not persisted: see `#unackedByDelivery`. */
  readonly #byDelivery = new WeakMap<Channel, Map<string, StoredEvent>>();
  readonly #scheduler: Scheduler;
  readonly #lazyCommitMs: number;
  #lazyTimer: unknown = null;
  readonly #seqBlock: number;
  /** The write that puts the latest reservation on disk, while it runs. */
  #reserving: Promise<void> | null = null;
  readonly #maxChannels: number;
  readonly #maxTotalBytes: number;
  /** Base64 body bytes across channels. */
  #totalBytes = 0;

  constructor({ file, clock, maxEvents, maxBytes, maxAgeMs, scheduler, lazyCommitMs, seqBlock = 1, maxChannels = Infinity, maxTotalBytes = Infinity, io, compactAfterBytes, retryMs, log }: ChannelStoreOptions) {
    this.#maxChannels = maxChannels;
    this.#maxTotalBytes = maxTotalBytes;
    this.#seqBlock = seqBlock;
    this.#clock = clock;
    this.#scheduler = scheduler;
    this.#lazyCommitMs = lazyCommitMs;
    this.#maxEvents = maxEvents;
    this.#maxBytes = maxBytes;
    this.#maxAgeMs = maxAgeMs;
    this.#file =
      file === false
        ? null
        : new ChannelFile({
            file,
            channels: () => this.#channels.values(),
            // By sequence number, not a map of lines by event, which would cost a WeakMap entry per event.
            holds: (channel, event) => this.#channels.get(channel.id) === channel && channel.events[indexOfSeq(channel.events, event.seq)] === event,
            timers: scheduler,
            clock,
            ...(io ? { io } : {}),
            ...(compactAfterBytes ? { compactAfterBytes } : {}),
            ...(retryMs ? { retryMs } : {}),
            ...(log ? { log } : {}),
          });
  }

  /** Takes the data file's lock and loads it, if any. */
  async open(): Promise<void> {
    for (const channel of this.#file ? await this.#file.open() : []) {
      this.#channels.set(channel.id, channel);
      this.#totalBytes += this.#size(channel);
    }
  }

  /** Writes what is pending, closes the journal and releases the lock. */
  async close(): Promise<void> {
    this.#scheduler.clearTimeout(this.#lazyTimer);
    this.#lazyTimer = null;
    await this.#file?.close();
  }

  get size(): number {
    return this.#channels.size;
  }

  /** Base64 body bytes buffered across channels. */
  get totalBytes(): number {
    return this.#totalBytes;
  }

  get health(): StoreHealth {
    const failure = this.#file?.failure;
    return failure ? { ok: false, ...failure } : { ok: true };
  }

  /** Creates a channel; the token is returned once and only its hash is kept. `null` at `maxChannels`. */
  create(): { channel: Channel; token: string } | null {
    if (this.#channels.size >= this.#maxChannels) return null;
    // 144 random bits (128 at least): an id nobody can guess.
    const id = randomBytes(18).toString('base64url');
    const token = `clt_${randomBytes(32).toString('base64url')}`;
    const channel: Channel = { id, tokenHash: hashToken(token), createdAt: this.#clock(), nextSeq: 1, seqLimit: 1, events: [], acked: new Set() };
    this.#channels.set(id, channel);
    this.#file?.created(channel);
    return { channel, token };
  }

  get(id: string): Channel | undefined {
    return this.#channels.get(id);
  }

  delete(id: string): boolean {
    const channel = this.#channels.get(id);
    if (!channel) return false;
    this.#totalBytes -= this.#size(channel);
    this.#channels.delete(id);
    this.#file?.deleted(id);
    return true;
  }

  /** Checks `token` against the channel's stored hash in constant time. */
  check(id: string, token: string | undefined): TokenCheck {
    const channel = this.#channels.get(id);
    if (!channel) return 'not_found';
    if (token === undefined) return 'invalid_token';
    const given = Buffer.from(hashToken(token), 'hex');
    return timingSafeEqual(given, Buffer.from(channel.tokenHash, 'hex')) ? 'ok' : 'invalid_token';
  }

  /**
   * Appends an event with the channel's next sequence number, after dropping what the bounds allow.
   * Refuses (returns why) when the channel is full of unacknowledged events or the relay's total is
   * reached: the sender is told to retry later rather than an undelivered event being dropped in silence.
   */
  append(channel: Channel, event: Omit<StoredEvent, 'seq'>): StoredEvent | AppendRefusal {
    const size = base64Length(event.body);
    // A retry of a delivery still waiting here replaces it: one copy per delivery, the newest (its
    // signature timestamp is the freshest), and a sender retrying on 503 cannot fill the buffer alone.
    if (event.deliveryId !== null) {
      const copy = this.#unackedByDelivery(channel).get(event.deliveryId);
      if (copy) this.discard(channel, copy);
    }
    this.prune(channel, size);
    if (channel.events.length >= this.#maxEvents) return 'channel_events';
    if (this.#size(channel) + size > this.#maxBytes) return 'channel_bytes';
    if (this.#totalBytes + size > this.#maxTotalBytes && !this.#freeAcked(this.#totalBytes + size - this.#maxTotalBytes)) return 'relay_bytes';
    if (channel.nextSeq >= channel.seqLimit) this.#reserve(channel);
    const stored: StoredEvent = { seq: channel.nextSeq++, ...event };
    channel.events.push(stored);
    if (stored.deliveryId !== null) this.#unackedByDelivery(channel).set(stored.deliveryId, stored);
    this.#bytes.set(channel, this.#size(channel) + size);
    this.#totalBytes += size;
    this.#file?.appended(channel, stored);
    return stored;
  }

  /** Removes an event the relay could not keep (its write failed): it is not buffered, nor written later. */
  discard(channel: Channel, event: StoredEvent): void {
    if (this.#remove(channel, event)) this.#file?.dropped(channel, [event.seq]);
  }

  /** Drops acknowledged events across channels, oldest first in each, until `bytes` are freed; false when they cannot be. */
  #freeAcked(bytes: number): boolean {
    let freed = 0;
    for (const channel of this.#channels.values()) {
      if (channel.acked.size === 0) continue;
      const dropped: number[] = [];
      for (const event of channel.events) {
        if (freed >= bytes) break;
        if (!channel.acked.has(event.seq)) continue;
        dropped.push(event.seq);
        freed += base64Length(event.body);
      }
      for (const seq of dropped) this.#remove(channel, channel.events[indexOfSeq(channel.events, seq)]!);
      this.#file?.dropped(channel, dropped);
      if (freed >= bytes) return true;
    }
    return false;
  }

  /**
   * Resolves once every sequence number handed out so far is below a limit on disk, or `null` when it
   * already is. Await it before sending an event: a number must not reach a listener before it is reserved.
   */
  reserved(): Promise<void> | null {
    return this.#reserving;
  }

  #reserve(channel: Channel): void {
    const limit = channel.nextSeq + this.#seqBlock;
    const before = channel.seqLimit;
    channel.seqLimit = limit;
    if (!this.#file) return;
    this.#file.reserved(channel);
    const write = this.commit();
    const settle = () => {
      if (this.#reserving === write) this.#reserving = null;
    };
    this.#reserving = write;
    // Not on disk: the next event must reserve again rather than use numbers a crash could reuse.
    write.then(settle, () => {
      settle();
      if (channel.seqLimit === limit) channel.seqLimit = Math.max(before, channel.nextSeq);
    });
  }

  /** Marks `seq` acknowledged; true when it was not before. */
  ack(channel: Channel, seq: number): boolean {
    if (channel.acked.has(seq)) return false;
    const event = channel.events[indexOfSeq(channel.events, seq)];
    if (!event) return false;
    channel.acked.add(seq);
    this.#file?.acked(channel, [seq]);
    if (event.deliveryId !== null && this.#byDelivery.get(channel)?.get(event.deliveryId) === event) this.#byDelivery.get(channel)!.delete(event.deliveryId);
    return true;
  }

  /** Unacknowledged events by `X-Service-Delivery`; built on first use, as prune drops it. */
  #unackedByDelivery(channel: Channel): Map<string, StoredEvent> {
    let map = this.#byDelivery.get(channel);
    if (!map) {
      map = new Map();
      for (const event of channel.events) if (event.deliveryId !== null && !channel.acked.has(event.seq)) map.set(event.deliveryId, event);
      this.#byDelivery.set(channel, map);
    }
    return map;
  }

  /** Takes an event out of memory (its line is then not written, if it was not yet); false when it was not there. */
  #remove(channel: Channel, event: StoredEvent): boolean {
    const index = indexOfSeq(channel.events, event.seq);
    if (index === -1) return false;
    channel.events.splice(index, 1);
    channel.acked.delete(event.seq);
    this.#bytes.set(channel, this.#size(channel) - base64Length(event.body));
    this.#totalBytes -= base64Length(event.body);
    if (event.deliveryId !== null && this.#byDelivery.get(channel)?.get(event.deliveryId) === event) this.#byDelivery.get(channel)!.delete(event.deliveryId);
    return true;
  }

  /**
   * Drops events older than the age bound and, to make room for `incoming` more bytes within the count
   * and byte bounds, acknowledged ones oldest first. It frees a tenth of each bound at once, so a full
   * busy channel does not rescan its buffer on every event.
   */
  prune(channel: Channel, incoming = 0): void {
    const cutoff = this.#clock() - this.#maxAgeMs;
    const bytes = this.#size(channel);
    const fits = channel.events.length < this.#maxEvents && bytes + incoming <= this.#maxBytes;
    if (fits && (channel.events[0]?.receivedAt ?? Infinity) >= cutoff) return;
    let extraCount = channel.events.length - this.#maxEvents + Math.max(1, Math.floor(this.#maxEvents / 10));
    let extraBytes = bytes + incoming - this.#maxBytes + Math.floor(this.#maxBytes / 10);
    const { events, acked } = channel;
    const dropped: number[] = [];
    let droppedBytes = 0;
    const byDelivery = this.#byDelivery.get(channel);
    const goes = (event: StoredEvent) => event.receivedAt < cutoff || ((extraCount > 0 || extraBytes > 0) && acked.has(event.seq));
    const drop = (event: StoredEvent) => {
      const size = base64Length(event.body);
      extraCount--;
      extraBytes -= size;
      droppedBytes += size;
      acked.delete(event.seq);
      dropped.push(event.seq);
      // Only the dropped ones leave the index: rebuilding it would walk the whole buffer every tenth of it.
      if (event.deliveryId !== null && byDelivery?.get(event.deliveryId) === event) byDelivery.delete(event.deliveryId);
    };
    // A busy channel's oldest tenth is all acknowledged: it goes as one prefix, and the rest is only looked
    // over for an event that goes too (rebuilding the buffer event by event costs 2 % of the relay).
    let start = 0;
    while (start < events.length && goes(events[start]!)) drop(events[start++]!);
    let next = start;
    while (next < events.length && !goes(events[next]!)) next++;
    if (next === events.length) {
      if (start > 0) channel.events = events.slice(start);
    } else {
      const kept = events.slice(start, next);
      for (let i = next; i < events.length; i++) {
        const event = events[i]!;
        if (goes(event)) drop(event);
        else kept.push(event);
      }
      channel.events = kept;
    }
    this.#totalBytes -= droppedBytes;
    this.#bytes.set(channel, bytes - droppedBytes);
    this.#file?.dropped(channel, dropped);
  }

  /** Unacknowledged events, oldest first, that pass `wants`. */
  unacked(channel: Channel, wants: (event: StoredEvent) => boolean): StoredEvent[] {
    this.prune(channel);
    return channel.events.filter((event) => !channel.acked.has(event.seq) && wants(event));
  }

  /** The buffered event named by a sequence number or by its delivery id (the latest such). */
  find(channel: Channel, ref: string): StoredEvent | undefined {
    const bySeq = /^\d+$/.test(ref) ? Number(ref) : NaN;
    for (let i = channel.events.length - 1; i >= 0; i--) {
      const event = channel.events[i]!;
      if (event.seq === bySeq || event.deliveryId === ref) return event;
    }
    return undefined;
  }

  #size(channel: Channel): number {
    let bytes = this.#bytes.get(channel);
    if (bytes === undefined) {
      bytes = channel.events.reduce((sum, event) => sum + base64Length(event.body), 0);
      this.#bytes.set(channel, bytes);
    }
    return bytes;
  }

  /** Resolves once the current state is on disk (immediately without a file); rejects when the write failed (it is retried by itself). */
  commit(): Promise<void> {
    if (!this.#file) return Promise.resolve();
    this.#scheduler.clearTimeout(this.#lazyTimer);
    this.#lazyTimer = null;
    return this.#file.commit();
  }

  /**
   * Writes within `lazyCommitMs`, for changes whose loss costs only a redelivery (acks, live events): a
   * busy channel writes its file a few times a second instead of once per event.
   */
  commitSoon(): void {
    if (!this.#file || this.#lazyTimer !== null) return;
    this.#lazyTimer = this.#scheduler.setTimeout(() => {
      this.#lazyTimer = null;
      // A failure is logged once by the file and retried by itself; nobody waits for this write.
      this.#file!.commit().catch(() => undefined);
    }, this.#lazyCommitMs);
  }
}
