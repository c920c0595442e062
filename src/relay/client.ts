import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { RelayError } from '../protocol/errors.js';
import { HEADER_DELIVERY, HEADER_EVENT, HEADER_SIGNATURE } from '../protocol/headers.js';
import { verifySignature } from '../protocol/signature.js';
import { checkReply, CLOSE, encodeFrame, FrameError, parseServerFrame, type ClientFrame, type EventFrame, type ReplyFrame } from './frames.js';
import { ReconnectBackoff, sleep } from './backoff.js';
import { corkPerTurn } from './cork.js';
import { ForwardError, createForwarder, targetUrl, type Forwarder } from './forward.js';
import { rawHeader } from './headers.js';
import { Heartbeat } from './heartbeat.js';
import { resolveListenerOptions, type ResolvedListenerOptions } from './listener-options.js';
import type { ListenerEvent, ListenerEvents, ListenerOptions, ListenerReply } from './listener-types.js';

export type { ListenerEvent, ListenerEvents, ListenerOptions, ListenerReply, ReconnectOptions } from './listener-types.js';

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
  readonly #heartbeat: Heartbeat;
  readonly #abort = new AbortController();
  /** Replays asked for, oldest first, each with the socket its answer must come on. */
  readonly #replays: Array<{ resolve: (reply: ListenerReply | null) => void; reject: (error: Error) => void; socket: WebSocket }> = [];
  #socket: WebSocket | null = null;
  /** Called before each send on `#socket`: replies finished in one event-loop turn leave in one write. */
  #cork: () => void = () => undefined;
  #backlog: Promise<void> = Promise.resolve();
  #held: Array<[EventFrame, WebSocket]> | null = null;
  #stopped = false;
  #finish!: (error: RelayError | null) => void;

  constructor(options: ListenerOptions) {
    super();
    this.#options = resolveListenerOptions(options);
    const { forwardTo, localTimeoutMs, maxReplyBytes, scheduler, clock, pingIntervalMs, readDeadlineMs } = this.#options;
    this.#forwarder = createForwarder(forwardTo, localTimeoutMs, maxReplyBytes, scheduler);
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
      let session: { closed: Promise<number> };
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
      const openedAt = this.#options.clock();
      const code = await session.closed;
      if (code === CLOSE.invalidToken) return this.#stop(new RelayError('invalid_token', 'The relay no longer accepts this token.'));
      if (code === CLOSE.channelGone) return this.#stop(new RelayError('channel_not_found', 'The channel was deleted.'));
      if (this.#stopped) break;
      delayMs = backoff.afterSession(this.#options.clock() - openedAt, code);
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
    const socket = this.#socket;
    if (this.#stopped || socket === null || socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error(`Cannot replay ${ref}: the listener is not connected to the relay.`));
    }
    return new Promise((resolve, reject) => {
      this.#replays.push({ resolve, reject, socket });
      this.#send({ type: 'replay', ref: String(ref) }, socket);
    });
  }

  /** Queues incoming events until the returned function is called. */
  [HOLD](): () => void {
    this.#held ??= [];
    return () => {
      const held = this.#held ?? [];
      this.#held = null;
      for (const [frame, socket] of held) this.#dispatch(frame, socket);
    };
  }

  /** Disconnects and stops reconnecting. */
  async close(): Promise<void> {
    if (!this.#stopped) {
      this.#socket?.close(CLOSE.normal, 'listener closing');
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
    this.#socket?.terminate();
    for (const { resolve } of this.#replays.splice(0)) resolve(null);
    this.emit('close', error);
    this.#finish(error);
  }

  /** One connection attempt: resolves, once upgraded, with a promise of the close code. */
  #open(): Promise<{ closed: Promise<number> }> {
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
        this.#socket = socket;
        this.#cork = cork;
        socket.on('error', () => undefined); // the close that follows is what matters
        this.#heartbeat.watch(socket);
        socket.on('message', (data, isBinary) => this.#onMessage(socket, data, isBinary));
        socket.once('close', () => this.#dropReplays(socket));
        resolve({ closed: new Promise((closed) => socket.once('close', (code) => closed(code))) });
      });
    });
  }

  #onMessage(socket: WebSocket, data: WebSocket.RawData, isBinary: boolean): void {
    let frame;
    try {
      frame = parseServerFrame(data, isBinary);
    } catch (error) {
      socket.close(error instanceof FrameError ? error.closeCode : CLOSE.policy, 'malformed frame');
      return;
    }
    if (frame.type === 'hello') return void this.emit('connected', { channel: frame.channel, listener: frame.listener });
    if (frame.type === 'replay_missing') return void this.#settleReplay(socket, null);
    if (this.#held) this.#held.push([frame, socket]);
    else this.#dispatch(frame, socket);
  }

  /** `socket` is the one the event came on: its reply goes back on it or nowhere. */
  #dispatch(frame: EventFrame, socket: WebSocket): void {
    // Caught-up events go to the local app one at a time, in sequence order; live ones go at once.
    if (frame.backlog) this.#backlog = this.#backlog.then(() => this.#handle(frame, socket));
    else void this.#handle(frame, socket);
  }

  async #handle(frame: EventFrame, socket: WebSocket): Promise<void> {
    const { body } = frame;
    const { secret, forwardTo } = this.#options;
    const event: ListenerEvent = {
      seq: frame.seq,
      method: frame.method,
      url: frame.path || frame.query ? targetUrl(forwardTo, frame).href : forwardTo.href,
      eventName: rawHeader(frame.headers, HEADER_EVENT) ?? null,
      deliveryId: rawHeader(frame.headers, HEADER_DELIVERY) ?? null,
      signatureValid: secret === undefined ? null : verifySignature(body, rawHeader(frame.headers, HEADER_SIGNATURE), secret),
      backlog: frame.backlog,
      replay: frame.replay,
      body,
    };
    this.emit('event', event);
    const started = performance.now();
    let reply: ListenerReply;
    try {
      const local = await this.#forwarder.forward(frame);
      if (local.status < 200 || local.status > 599) throw new ForwardError('local_unreachable', `the local app answered with status ${local.status}`);
      const replyFrame: ReplyFrame = { type: 'reply', seq: frame.seq, status: local.status, headers: local.headers, body: local.body };
      const encoded = encodeFrame(replyFrame);
      try {
        checkReply(replyFrame, encoded.length);
      } catch (invalid) {
        // The relay would close the socket (1008/1009) and resend the event: a loop the sender never leaves.
        throw new ForwardError('local_unreachable', `the local reply cannot be relayed: ${(invalid as Error).message}`);
      }
      reply = { event, status: local.status, error: null, durationMs: performance.now() - started };
      this.#sendEncoded(encoded, socket);
    } catch (error) {
      const { code, message } = error instanceof ForwardError ? error : new ForwardError('local_unreachable', String(error));
      reply = { event, status: null, error: { code, detail: message }, durationMs: performance.now() - started };
      this.#send({ type: 'fail', seq: frame.seq, code, detail: message.slice(0, 1000) }, socket);
    }
    if (frame.replay) this.#settleReplay(socket, reply);
    this.emit('reply', reply);
  }

  /** Answers the oldest replay asked on `socket`; one asked on an earlier socket was rejected when it closed. */
  #settleReplay(socket: WebSocket, reply: ListenerReply | null): void {
    if (this.#replays[0]?.socket === socket) this.#replays.shift()!.resolve(reply);
  }

  /** Rejects the replays waiting on `socket`, which closed: their answer can no longer come. */
  #dropReplays(socket: WebSocket): void {
    for (let i = this.#replays.length - 1; i >= 0; i--) {
      if (this.#replays[i]!.socket !== socket) continue;
      this.#replays.splice(i, 1)[0]!.reject(new Error('The connection to the relay closed before the replay was answered.'));
    }
  }

  #send(frame: ClientFrame, socket = this.#socket): void {
    this.#sendEncoded(encodeFrame(frame), socket);
  }

  /** Sends on `socket` (for a reply, the one its event came on) only while it is the open connection. */
  #sendEncoded(data: string | Buffer, socket = this.#socket): void {
    // A reply whose socket is gone is dropped, never sent on a newer one: the relay resends unacknowledged
    // events on reconnect, and a relay restarted since may have given its sequence number to another event.
    if (socket === null || socket !== this.#socket || socket.readyState !== WebSocket.OPEN) return;
    this.#cork();
    socket.send(data);
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
