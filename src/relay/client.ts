import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { RelayError } from '../protocol/errors.js';
import { CLOSE, encodeFrame, FrameError, parseServerFrame, type ClientFrame, type EventFrame } from './frames.js';
import { ReconnectBackoff, sleep } from './backoff.js';
import { corkPerTurn } from './cork.js';
import { createForwarder, type Forwarder } from './forward.js';
import { Heartbeat } from './heartbeat.js';
import { resolveListenerOptions, type ResolvedListenerOptions } from './listener-options.js';
import type { ListenerEvents, ListenerOptions, ListenerReply } from './listener-types.js';
import { LocalHop } from './local-hop.js';

export type { ListenerEvent, ListenerEvents, ListenerOptions, ListenerRefusalCode, ListenerReply, ReconnectOptions } from './listener-types.js';

/** One connection to the relay, and the work that belongs to it. */
interface Session {
  readonly socket: WebSocket;
  /** Called before each send: replies finished in one event-loop turn leave in one write. */
  readonly cork: () => void;
  /** Resolves with the close code. */
  readonly closed: Promise<number>;
  /** Caught-up events go to the local app one at a time, in order; each connection has its own chain. */
  backlog: Promise<void>;
  /** When the relay said hello, by the listener's clock. */
  helloAt: number | null;
  /** A pong came after the hello: the relay answers on this connection. */
  proved: boolean;
  /** Events that came on it: a session that carried one is worth reconnecting to at once. */
  events: number;
}

/** Holds events until released: `connectListener` uses it so none is emitted before its caller can subscribe. */
const HOLD = Symbol('hold');

/**
 * A connected `listen`: forwards the relay's events to the local app and carries each reply back.
 * Reconnects by itself; stops for good only on `close()` or on what reconnecting cannot heal.
 * @example
 * listener.on('reply', ({ event, status, durationMs }) => console.log(event.deliveryId, status, durationMs));
 * const refusal = await listener.closed; // null after close(), a RelayError when the relay refused it
 */
export class Listener extends EventEmitter<ListenerEvents> {
  /** Resolves when the listener stops: `null` after `close()`, the `RelayError` when the relay refused it. */
  readonly closed: Promise<RelayError | null>;
  readonly #options: ResolvedListenerOptions;
  readonly #forwarder: Forwarder;
  readonly #hop: LocalHop;
  readonly #heartbeat: Heartbeat;
  readonly #abort = new AbortController();
  /** Replays asked for, oldest first, each with the connection its answer must come on. */
  readonly #replays: Array<{ resolve: (reply: ListenerReply | null) => void; reject: (error: Error) => void; session: Session }> = [];
  /** The latest connection; replies go on it only while it is open. */
  #session: Session | null = null;
  #held: Array<[EventFrame, Session]> | null = null;
  #stopped = false;
  #finish!: (error: RelayError | null) => void;

  constructor(options: ListenerOptions) {
    super();
    this.#options = resolveListenerOptions(options);
    const { forwardTo, localTimeoutMs, maxReplyBytes, scheduler, clock, pingIntervalMs, readDeadlineMs } = this.#options;
    this.#forwarder = createForwarder(forwardTo, localTimeoutMs, maxReplyBytes, scheduler);
    this.#hop = new LocalHop(this.#options, this.#forwarder);
    this.#heartbeat = new Heartbeat({ clock, scheduler, intervalMs: pingIntervalMs, deadlineMs: readDeadlineMs });
    this.closed = new Promise((resolve) => (this.#finish = resolve));
  }

  /** The WebSocket URL of the channel. */
  get endpoint(): string {
    const url = new URL(`channels/${encodeURIComponent(this.#options.channel)}/listen`, this.#options.relayUrl.replace(/\/*$/, '/'));
    url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
    if (this.#options.events?.length) url.searchParams.set('events', this.#options.events.join(','));
    return url.href;
  }

  /**
   * Connects, and reconnects after every drop (waiting as `ReconnectBackoff` says), until `close()` or a
   * refusal. Resolves when it stops.
   */
  async run(): Promise<void> {
    const backoff = new ReconnectBackoff(this.#options.reconnect);
    // Failed connects since the last connection, for the reports.
    let attempt = 0;
    let delayMs = 0;
    while (!this.#stopped) {
      if (delayMs > 0) await sleep(delayMs, this.#abort.signal);
      if (this.#stopped) break;
      let session: Session;
      try {
        session = await this.#open();
      } catch (error) {
        if (error instanceof RelayError) return this.#stop(error);
        if (this.#stopped) break;
        delayMs = backoff.afterFailedConnect();
        this.emit('reconnecting', { attempt: ++attempt, error: error as Error, delayMs });
        continue;
      }
      attempt = 0;
      const code = await session.closed;
      if (code === CLOSE.invalidToken) return this.#stop(new RelayError('invalid_token', 'The relay no longer accepts this token.'));
      if (code === CLOSE.channelGone) return this.#stop(new RelayError('channel_not_found', 'The channel was deleted.'));
      if (this.#stopped) break;
      delayMs = backoff.afterSession({ helloAt: session.helloAt, proved: session.proved, events: session.events, closedAt: this.#options.clock(), code });
      this.emit('reconnecting', { attempt: 0, error: new Error(`connection closed (${code})`), delayMs });
    }
    this.#stop(null);
  }

  /**
   * Asks the relay to resend a buffered event (by sequence number or delivery id) to the local URL.
   * Resolves with its local reply, or `null` when the relay no longer has it. Rejects when the listener
   * is not connected, or its connection closes before the answer.
   */
  replay(ref: string | number): Promise<ListenerReply | null> {
    const session = this.#session;
    if (!this.#isCurrent(session)) return Promise.reject(new Error(`Cannot replay ${ref}: the listener is not connected to the relay.`));
    return new Promise((resolve, reject) => {
      this.#replays.push({ resolve, reject, session });
      this.#send({ type: 'replay', ref: String(ref) }, session);
    });
  }

  /** Queues incoming events until the returned function is called. */
  [HOLD](): () => void {
    this.#held ??= [];
    return () => {
      const held = this.#held ?? [];
      this.#held = null;
      for (const [frame, session] of held) this.#dispatch(frame, session);
    };
  }

  /** Disconnects and stops reconnecting. */
  async close(): Promise<void> {
    if (!this.#stopped) {
      this.#session?.socket.close(CLOSE.normal, 'listener closing');
      this.#stop(null);
    }
    await this.closed;
  }

  #stop(error: RelayError | null): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    this.#heartbeat.stop();
    this.#forwarder.close();
    this.#session?.socket.terminate();
    for (const { resolve } of this.#replays.splice(0)) resolve(null);
    this.emit('close', error);
    this.#finish(error);
  }

  /** One connection attempt: resolves, once upgraded, with its session. */
  #open(): Promise<Session> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.endpoint, {
        headers: { authorization: `Bearer ${this.#options.token}` },
        perMessageDeflate: false,
        // A connect that never completes (packets dropped on a sleeping network) is another failed attempt.
        handshakeTimeout: this.#options.readDeadlineMs,
      });
      socket.once('unexpected-response', (_req, res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status === 401) reject(new RelayError('invalid_token', 'The relay refused the listening token.', status));
        else if (status === 404) reject(new RelayError('channel_not_found', `The relay has no channel ${this.#options.channel}.`, status));
        else reject(new Error(`The relay answered the upgrade with HTTP ${status}.`));
        socket.terminate();
      });
      socket.once('error', (error) => reject(error));
      let cork: () => void = () => undefined;
      socket.once('upgrade', (res) => (cork = corkPerTurn(res.socket)));
      socket.once('open', () => {
        if (this.#stopped) return socket.terminate();
        const closed = new Promise<number>((done) => socket.once('close', (code) => done(code)));
        const session: Session = { socket, cork, closed, backlog: Promise.resolve(), helloAt: null, proved: false, events: 0 };
        this.#session = session;
        socket.on('error', () => undefined); // the close that follows is what matters
        this.#heartbeat.watch(socket);
        socket.on('message', (data, isBinary) => this.#onMessage(session, data, isBinary));
        socket.on('pong', () => (session.proved ||= session.helloAt !== null));
        socket.once('close', () => this.#dropReplays(session));
        resolve(session);
      });
    });
  }

  #onMessage(session: Session, data: WebSocket.RawData, isBinary: boolean): void {
    let frame;
    try {
      frame = parseServerFrame(data, isBinary);
    } catch (error) {
      session.socket.close(error instanceof FrameError ? error.closeCode : CLOSE.policy, 'malformed frame');
      return;
    }
    if (frame.type === 'hello') {
      session.helloAt = this.#options.clock();
      // Its pong proves the relay answers on this connection: then the reconnect backoff starts over.
      session.socket.ping();
      return void this.emit('connected', { channel: frame.channel, listener: frame.listener });
    }
    if (frame.type === 'replay_missing') return void this.#settleReplay(session, null);
    session.events++;
    if (this.#held) this.#held.push([frame, session]);
    else this.#dispatch(frame, session);
  }

  /** `session` is the connection the event came on: its reply goes back on it or nowhere. */
  #dispatch(frame: EventFrame, session: Session): void {
    // Caught-up events go to the local app one at a time, in sequence order; live ones go at once.
    if (frame.backlog) session.backlog = session.backlog.then(() => this.#handle(frame, session));
    else void this.#handle(frame, session);
  }

  async #handle(frame: EventFrame, session: Session): Promise<void> {
    // Work for a closed connection is dropped, not done: the relay sends the event again on the new one,
    // and the new connection's catch-up must not wait behind it.
    if (!this.#isCurrent(session)) return;
    const prepared = this.#hop.prepare(frame);
    this.emit('event', prepared.event);
    const { reply, frame: answer } = await this.#hop.answer(prepared);
    this.#sendEncoded(answer, session);
    if (frame.replay) this.#settleReplay(session, reply);
    this.emit('reply', reply);
  }

  /** True while `session` is the open connection. */
  #isCurrent(session: Session | null): session is Session {
    return !this.#stopped && session !== null && session === this.#session && session.socket.readyState === WebSocket.OPEN;
  }

  /** Answers the oldest replay asked on `session`; one asked on an earlier connection was rejected when it closed. */
  #settleReplay(session: Session, reply: ListenerReply | null): void {
    if (this.#replays[0]?.session === session) this.#replays.shift()!.resolve(reply);
  }

  /** Rejects the replays waiting on `session`, which closed: their answer can no longer come. */
  #dropReplays(session: Session): void {
    for (let i = this.#replays.length - 1; i >= 0; i--) {
      if (this.#replays[i]!.session !== session) continue;
      this.#replays.splice(i, 1)[0]!.reject(new Error('The connection to the relay closed before the replay was answered.'));
    }
  }

  #send(frame: ClientFrame, session = this.#session): void {
    this.#sendEncoded(encodeFrame(frame), session);
  }

  /** Sends on `session` (for a reply, the one its event came on) only while it is the open connection. */
  #sendEncoded(data: string | Buffer, session = this.#session): void {
    // A reply whose connection is gone is dropped, never sent on a newer one: the relay resends unacknowledged
    // events on reconnect, and a relay restarted since may have given its sequence number to another event.
    if (!this.#isCurrent(session)) return;
    session.cork();
    session.socket.send(data);
  }
}

/**
 * Connects a listener to a relay channel. Resolves once connected; rejects with a `RelayError` when the
 * relay refuses the token (`invalid_token`) or does not know the channel (`channel_not_found`).
 * Network failures are retried with backoff and reported as `reconnecting` events.
 * @example
 * const listener = await connectListener({ relayUrl, channel, token, forwardTo: 'http://localhost:3000/webhooks' });
 * listener.on('reply', (r) => console.log(r.status));
 */
export async function connectListener(options: ListenerOptions): Promise<Listener> {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected `options` to be an object.');
  const listener = new Listener(options);
  // Events caught up right after the hello would otherwise be emitted before the caller, resuming after
  // this promise, has attached its handlers; they are released on the next turn of the event loop.
  const release = listener[HOLD]();
  const connected = new Promise<void>((resolve) => listener.once('connected', () => resolve()));
  void listener.run();
  const outcome = await Promise.race([connected.then(() => null), listener.closed]);
  if (outcome) throw outcome;
  setImmediate(release);
  return listener;
}
