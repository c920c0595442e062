import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import type { Channel, ChannelStore, StoredEvent } from './channels.js';
import { corkPerTurn } from './cork.js';
import { CLOSE, encodeFrame, FrameError, parseClientFrame, type EventFrame, type FailFrame, type ReplyFrame } from './frames.js';
import type { Heartbeat, Scheduler } from './heartbeat.js';

/** What became of one live event sent to the channel's listeners. */
export type Outcome =
  | { kind: 'reply'; frame: ReplyFrame }
  | { kind: 'fail'; frame: FailFrame }
  | { kind: 'timeout' }
  /** Every listener it was sent to disconnected first: it stays buffered for the catch-up. */
  | { kind: 'gone' };

/** One connected `listen`. */
interface Connection {
  readonly id: string;
  readonly socket: WebSocket;
  readonly channelId: string;
  /** `X-Service-Event` names it wants, or `null` for all. */
  readonly events: ReadonlySet<string> | null;
  /** Called before each send: frames sent in one event-loop turn leave in one write. */
  readonly cork: () => void;
}

interface Pending {
  readonly waiting: Set<Connection>;
  firstFail: FailFrame | null;
  timer: unknown;
  resolve(outcome: Outcome): void;
}

export interface HubOptions {
  store: ChannelStore;
  heartbeat: Heartbeat;
  scheduler: Scheduler;
  responseTimeoutMs: number;
  pingIntervalMs: number;
  maxFrameBytes: number;
  log: (message: string) => void;
}

/**
 * The listeners connected to each channel: sends them events, matches their replies to the senders
 * waiting at the ingress, and acknowledges events in the store. A listener that breaks the protocol is
 * closed alone; nothing it sends can reach another channel.
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

  /**
   * Takes a freshly upgraded socket (`transport` is the TCP socket under it): says hello, then sends the
   * channel's unacknowledged events in order.
   */
  connect(channel: Channel, socket: WebSocket, events: ReadonlySet<string> | null, transport: Writable): void {
    const connection: Connection = { id: randomBytes(6).toString('hex'), socket, channelId: channel.id, events, cork: corkPerTurn(transport) };
    let set = this.#byChannel.get(channel.id);
    if (!set) this.#byChannel.set(channel.id, (set = new Set()));
    set.add(connection);
    this.#options.heartbeat.watch(socket);
    socket.on('error', (error) => this.#options.log(`listener ${connection.id}: ${error.message}`));
    socket.on('message', (data, isBinary) => this.#onMessage(connection, data, isBinary));
    socket.once('close', () => this.#onClose(connection));
    this.#send(connection, { type: 'hello', channel: channel.id, listener: connection.id, pingIntervalMs: this.#options.pingIntervalMs });
    for (const event of this.#options.store.unacked(channel, (stored) => wants(connection, stored))) {
      this.#send(connection, toFrame(event, { backlog: true, replay: false }));
    }
  }

  /**
   * Who would take an event named `eventName` now: `'none'` when no listener is connected, `'filtered'`
   * when some are but their `--events` filters all leave it out, `'wanted'` otherwise.
   */
  audience(channelId: string, eventName: string | null): 'none' | 'filtered' | 'wanted' {
    const set = this.#byChannel.get(channelId);
    if (!set || set.size === 0) return 'none';
    for (const connection of set) if (wantsName(connection, eventName)) return 'wanted';
    return 'filtered';
  }

  /**
   * Sends a live event to every listener of the channel that wants it and resolves with the first
   * reply, or `null` at once when none does (the caller answers 503 and the event waits in the buffer).
   */
  deliver(channel: Channel, event: StoredEvent): Promise<Outcome> | null {
    const targets = [...(this.#byChannel.get(channel.id) ?? [])].filter((connection) => wants(connection, event));
    if (targets.length === 0) return null;
    return new Promise<Outcome>((resolve) => {
      const key = pendingKey(channel.id, event.seq);
      const pending: Pending = {
        waiting: new Set(targets),
        firstFail: null,
        timer: null,
        resolve: (outcome) => {
          if (this.#pending.get(key) !== pending) return;
          this.#pending.delete(key);
          this.#options.scheduler.clearTimeout(pending.timer);
          resolve(outcome);
        },
      };
      // Below the sender's 10 s so the sender reads our 504, not its own timeout (spec section 6.4).
      pending.timer = this.#options.scheduler.setTimeout(() => pending.resolve({ kind: 'timeout' }), this.#options.responseTimeoutMs);
      this.#pending.set(key, pending);
      const frame = toFrame(event, { backlog: false, replay: false });
      for (const connection of targets) this.#send(connection, frame);
    });
  }

  /** Closes every listener of a channel, e.g. after it was deleted, with `code`. */
  closeChannel(channelId: string, code: number, reason: string): void {
    for (const connection of this.#byChannel.get(channelId) ?? []) connection.socket.close(code, reason);
  }

  /**
   * Closes every listener (relay shutting down) and resolves once their sockets are gone; a peer that
   * does not finish the closing handshake within `graceMs` is cut. Waiting senders get `gone`.
   */
  closeAll(code: number, reason: string, graceMs: number): Promise<void> {
    const sockets = [...this.#byChannel.values()].flatMap((set) => [...set].map((connection) => connection.socket));
    for (const pending of [...this.#pending.values()]) pending.resolve({ kind: 'gone' });
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
    const channel = this.#options.store.get(connection.channelId);
    if (!channel) return;
    const pending = frame.type === 'replay' ? undefined : this.#pending.get(pendingKey(channel.id, frame.seq));
    switch (frame.type) {
      case 'reply':
        if (this.#options.store.ack(channel, frame.seq)) this.#options.store.commitSoon();
        pending?.resolve({ kind: 'reply', frame });
        return;
      case 'fail':
        if (!pending || !pending.waiting.delete(connection)) return;
        pending.firstFail ??= frame;
        if (pending.waiting.size === 0) pending.resolve({ kind: 'fail', frame: pending.firstFail });
        return;
      case 'replay': {
        const event = this.#options.store.find(channel, frame.ref);
        this.#send(connection, event ? toFrame(event, { backlog: false, replay: true }) : { type: 'replay_missing', ref: frame.ref });
        return;
      }
    }
  }

  #onClose(connection: Connection): void {
    const set = this.#byChannel.get(connection.channelId);
    set?.delete(connection);
    if (set?.size === 0) this.#byChannel.delete(connection.channelId);
    for (const pending of [...this.#pending.values()]) {
      if (!pending.waiting.delete(connection) || pending.waiting.size > 0) continue;
      pending.resolve(pending.firstFail ? { kind: 'fail', frame: pending.firstFail } : { kind: 'gone' });
    }
  }

  #send(connection: Connection, frame: Parameters<typeof encodeFrame>[0]): void {
    // A socket that is closing drops the frame; its events stay unacknowledged and are caught up later.
    if (connection.socket.readyState !== connection.socket.OPEN) return;
    connection.cork();
    connection.socket.send(encodeFrame(frame));
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
