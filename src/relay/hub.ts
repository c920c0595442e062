import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import type { StoredEvent } from './channel-types.js';
import { corkPerTurn } from './cork.js';
import { eventMessage } from './wire.js';
import { CLOSE, encodeFrame, FrameError, parseClientFrame, type EventFrame, type ServerFrame } from './frames.js';
import type { Heartbeat, Scheduler } from './heartbeat.js';
import { GONE, Pending, type Outcome } from './pending.js';
import type { BusHandlers, RelayBus } from './relay-bus.js';
import { RelayStoreError, type Audience, type RelayStore } from './relay-store.js';

export type { Outcome } from './pending.js';

/** One connected `listen`. */
interface Connection {
  readonly id: string;
  readonly socket: WebSocket;
  readonly channelId: string;
  /** `X-Service-Event` names it wants, or `null` for all. */
  readonly events: ReadonlySet<string> | null;
  /** The same, as other processes see it: `*` or the names joined by commas. */
  readonly filter: string;
  /** Called before each send: frames sent in one event-loop turn leave in one write. */
  readonly cork: () => void;
  /** The TCP socket under `socket`: event messages are written to it whole (wire.ts). */
  readonly transport: Writable;
  /** Frames held while its catch-up is read (they go after it); `null` once the catch-up is sent. */
  held: ServerFrame[] | null;
  /**
   * The sequence numbers its catch-up carried. A live copy of one of them (stored by another process
   * before the catch-up was read, published after it was sent) is not sent again: the catch-up copy's
   * reply answers its sender, unless that reply came before the publish did (then the sender reads 504
   * and retries, and the receiver dedupes).
   */
  caughtUp: ReadonlySet<number>;
}

export interface HubOptions {
  store: RelayStore;
  /** The other relay processes, when the store is shared (Redis); `null` alone. */
  bus: RelayBus | null;
  heartbeat: Heartbeat;
  scheduler: Scheduler;
  responseTimeoutMs: number;
  pingIntervalMs: number;
  maxFrameBytes: number;
  log: (message: string) => void;
}

/**
 * The listeners connected to this process, by channel: sends them events, matches their replies to the
 * senders waiting at the ingress (here, or at another process through the bus), and acknowledges events
 * in the store. A listener that breaks the protocol is closed alone; nothing it sends reaches another channel.
 */
export class Hub {
  readonly #byChannel = new Map<string, Set<Connection>>();
  readonly #pending = new Map<string, Pending>();
  readonly #options: HubOptions;

  constructor(options: HubOptions) {
    this.#options = options;
  }

  get listeners(): number {
    let count = 0;
    for (const set of this.#byChannel.values()) count += set.size;
    return count;
  }

  /** What the bus calls: events and answers from other processes, deletions, and its recovery. */
  get busHandlers(): BusHandlers {
    return {
      event: (origin, channelId, event) => this.#remoteEvent(origin, channelId, event),
      answered: (channelId, seq, outcome) => this.#pending.get(pendingKey(channelId, seq))?.answered(outcome),
      deleted: (channelId) => this.closeChannel(channelId, CLOSE.channelGone, 'channel deleted'),
      // Live events published while Redis was away never reached this process: the listeners reconnect and catch up.
      recovered: () => this.#closeEvery(CLOSE.serviceRestart, 'relay storage reconnected; catch up'),
    };
  }

  /**
   * Takes a freshly upgraded socket (`transport` is the TCP socket under it): says hello, then sends the
   * channel's unacknowledged events in order, then the live events that came meanwhile.
   */
  connect(channelId: string, socket: WebSocket, events: ReadonlySet<string> | null, transport: Writable): void {
    const filter = events ? [...events].sort().join(',') : '*';
    const connection: Connection = { id: randomBytes(6).toString('hex'), socket, channelId, events, filter, cork: corkPerTurn(transport), transport, held: [], caughtUp: new Set() };
    let set = this.#byChannel.get(channelId);
    if (!set) this.#byChannel.set(channelId, (set = new Set()));
    set.add(connection);
    this.#options.heartbeat.watch(socket);
    socket.on('error', (error) => this.#options.log(`listener ${connection.id}: ${error.message}`));
    socket.on('message', (data, isBinary) => this.#onMessage(connection, data, isBinary));
    socket.once('close', () => this.#onClose(connection));
    // Subscribed and announced before the catch-up is read: an event stored after the read is published here.
    const watching = this.#options.bus?.watch(channelId, filter);
    void this.#catchUp(connection, watching);
  }

  /**
   * Who among the listeners connected to this process would take an event named `eventName`: `'none'`
   * when none is connected, `'filtered'` when their `--events` filters all leave it out, else `'wanted'`.
   */
  audience(channelId: string, eventName: string | null): Audience {
    const set = this.#byChannel.get(channelId);
    if (!set || set.size === 0) return 'none';
    for (const connection of set) if (wantsName(connection, eventName)) return 'wanted';
    return 'filtered';
  }

  /**
   * Sends a live event to every listener here that wants it and, when `remote`, to the other processes,
   * and resolves with the first reply (`gone` at once when nobody takes it: it waits in the buffer).
   */
  deliver(channelId: string, event: StoredEvent, remote: boolean): Promise<Outcome> {
    const targets = this.#targets(channelId, event);
    if (targets.length === 0 && !remote) return Promise.resolve(GONE);
    return new Promise<Outcome>((resolve) => {
      const pending = this.#wait(channelId, event.seq, targets, resolve);
      const frame = toFrame(event, { backlog: false, replay: false });
      for (const connection of targets) this.#send(connection, frame);
      if (!remote) return;
      pending.publishing();
      this.#options.bus!.publish(channelId, event).then(
        (count) => pending.published(count),
        (error: Error) => {
          // Stored already: the listeners elsewhere get it on their next catch-up.
          this.#options.log(`cannot publish event ${event.seq} of channel ${channelId} to the other relay processes: ${error.message}`);
          pending.published(0);
        },
      );
    });
  }

  /** Closes every listener here of a channel, e.g. after it was deleted, with `code`. */
  closeChannel(channelId: string, code: number, reason: string): void {
    for (const connection of this.#byChannel.get(channelId) ?? []) connection.socket.close(code, reason);
  }

  /**
   * Closes every listener (relay shutting down) and resolves once their sockets are gone; a peer that
   * does not finish the closing handshake within `graceMs` is cut. Waiting senders get `gone`.
   */
  closeAll(code: number, reason: string, graceMs: number): Promise<void> {
    const sockets = [...this.#byChannel.values()].flatMap((set) => [...set].map((connection) => connection.socket));
    for (const pending of [...this.#pending.values()]) pending.abandon();
    if (sockets.length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let open = sockets.length;
      const timer = this.#options.scheduler.setTimeout(() => {
        for (const socket of sockets) socket.terminate();
      }, graceMs);
      for (const socket of sockets) {
        socket.once('close', () => {
          if (--open > 0) return;
          this.#options.scheduler.clearTimeout(timer);
          resolve();
        });
        socket.close(code, reason);
      }
    });
  }

  async #catchUp(connection: Connection, watching: Promise<void> | undefined): Promise<void> {
    let backlog: StoredEvent[];
    try {
      await watching;
      backlog = await this.#options.store.unacked(connection.channelId, (stored) => wants(connection, stored));
    } catch (error) {
      this.#options.log(`listener ${connection.id}: cannot read its catch-up (${(error as Error).message}); closing it`);
      connection.socket.close(CLOSE.internalError, 'relay storage unavailable');
      return;
    }
    const held = connection.held ?? [];
    connection.held = null;
    connection.caughtUp = new Set(backlog.map((event) => event.seq));
    this.#send(connection, { type: 'hello', channel: connection.channelId, listener: connection.id, pingIntervalMs: this.#options.pingIntervalMs });
    for (const event of backlog) this.#send(connection, toFrame(event, { backlog: true, replay: false }));
    for (const frame of held) this.#send(connection, frame);
  }

  /** An event another process took: sent to the listeners here that want it; their answer goes back to `origin`. */
  #remoteEvent(origin: string, channelId: string, event: StoredEvent): void {
    const bus = this.#options.bus!;
    const targets = this.#targets(channelId, event);
    if (targets.length === 0) return bus.answer(origin, channelId, event.seq, GONE);
    // The origin keeps its own timer; this one only lets go of an answer nobody waits for any more.
    this.#wait(channelId, event.seq, targets, (outcome) => {
      if (outcome.kind !== 'timeout') bus.answer(origin, channelId, event.seq, outcome);
    });
    const frame = toFrame(event, { backlog: false, replay: false });
    for (const connection of targets) this.#send(connection, frame);
  }

  #targets(channelId: string, event: StoredEvent): Connection[] {
    const targets: Connection[] = [];
    for (const connection of this.#byChannel.get(channelId) ?? []) if (wants(connection, event)) targets.push(connection);
    return targets;
  }

  #wait(channelId: string, seq: number, targets: Connection[], done: (outcome: Outcome) => void): Pending {
    const key = pendingKey(channelId, seq);
    let timer: unknown = null;
    const pending = new Pending(targets, (outcome) => {
      if (this.#pending.get(key) === pending) this.#pending.delete(key);
      this.#options.scheduler.clearTimeout(timer);
      done(outcome);
    });
    // Below the sender's 10 s so the sender reads our 504, not its own timeout (spec section 6.4).
    timer = this.#options.scheduler.setTimeout(() => pending.timeout(), this.#options.responseTimeoutMs);
    this.#pending.set(key, pending);
    return pending;
  }

  #onMessage(connection: Connection, data: RawData, isBinary: boolean): void {
    let frame;
    try {
      frame = parseClientFrame(data, isBinary, this.#options.maxFrameBytes);
    } catch (error) {
      const closeCode = error instanceof FrameError ? error.closeCode : CLOSE.policy;
      this.#options.log(`listener ${connection.id} sent a bad frame (${(error as Error).message}); closing it`);
      connection.socket.close(closeCode, 'malformed frame');
      return;
    }
    const { channelId } = connection;
    const pending = frame.type === 'replay' ? undefined : this.#pending.get(pendingKey(channelId, frame.seq));
    switch (frame.type) {
      case 'reply':
        this.#ack(channelId, frame.seq);
        pending?.reply(frame);
        return;
      case 'fail':
        pending?.fail(connection, frame);
        return;
      case 'replay':
        this.#options.store.find(channelId, frame.ref).then(
          (event) => this.#send(connection, event ? toFrame(event, { backlog: false, replay: true }) : { type: 'replay_missing', ref: frame.ref }),
          (error: Error) => {
            this.#storeFailed(`cannot look up ${frame.ref} for a replay`, error);
            this.#send(connection, { type: 'replay_missing', ref: frame.ref });
          },
        );
        return;
    }
  }

  #ack(channelId: string, seq: number): void {
    const failed = (error: Error) => this.#storeFailed(`cannot acknowledge event ${seq}`, error);
    try {
      // The file store acknowledges at once; Redis answers with a promise.
      const acked = this.#options.store.ack(channelId, seq);
      if (acked) acked.catch(failed);
    } catch (error) {
      failed(error as Error);
    }
  }

  /** A store failure on a listener's behalf; an outage of Redis is reported once by the store itself. */
  #storeFailed(what: string, error: Error): void {
    if (!(error instanceof RelayStoreError && error.code === 'relay_unavailable')) this.#options.log(`${what}: ${error.message}`);
  }

  #onClose(connection: Connection): void {
    const set = this.#byChannel.get(connection.channelId);
    set?.delete(connection);
    if (set?.size === 0) this.#byChannel.delete(connection.channelId);
    this.#options.bus?.unwatch(connection.channelId, connection.filter);
    for (const pending of [...this.#pending.values()]) pending.gone(connection);
  }

  #closeEvery(code: number, reason: string): void {
    for (const set of this.#byChannel.values()) for (const connection of set) connection.socket.close(code, reason);
  }

  #send(connection: Connection, frame: ServerFrame): void {
    if (connection.held) return void connection.held.push(frame);
    if (frame.type === 'event' && !frame.backlog && !frame.replay && connection.caughtUp.has(frame.seq)) return;
    // A socket that is closing drops the frame; its events stay unacknowledged and are caught up later.
    if (connection.socket.readyState !== connection.socket.OPEN) return;
    connection.cork();
    if (frame.type === 'event') connection.transport.write(eventMessage(frame));
    else connection.socket.send(encodeFrame(frame));
  }
}

function wants(connection: Connection, event: StoredEvent): boolean {
  return wantsName(connection, event.eventName);
}

function wantsName(connection: Connection, eventName: string | null): boolean {
  return connection.events === null || (eventName !== null && connection.events.has(eventName));
}

function pendingKey(channelId: string, seq: number): string {
  return `${channelId}\n${seq}`;
}

function toFrame(event: StoredEvent, flags: { backlog: boolean; replay: boolean }): EventFrame {
  return {
    type: 'event',
    seq: event.seq,
    receivedAt: event.receivedAt,
    method: event.method,
    path: event.path,
    query: event.query,
    headers: event.headers,
    body: event.body,
    ...flags,
  };
}
