import { EventEmitter } from 'node:events';
import { sign } from '../protocol/signature.js';
import { createForwarder, ForwardError, type Forwarder, type LocalReply } from '../relay/forward.js';
import type { RawHeaders } from '../relay/frames.js';
import type { ListenerEvent, ListenerEvents, ListenerReply } from '../relay/listener-types.js';
import { withDeliveredAt, withSignature } from '../relay/resign.js';
import { ExchangeLog } from './exchange-log.js';
import { ExchangeBook, type ExchangeFilter } from './exchange-book.js';
import { exchangeOf } from './exchange-line.js';
import { detailOf, ExchangeRecord, keep, OUTCOMES, summarize, type Exchange, type ExchangeSummary, type HeldExchange, type Outcome } from './exchanges.js';
import { videoIdToKeep } from './video-id.js';
import { parseUrl } from '../http/url.js';

export interface ListenRecorderOptions {
  /** listen's `--forward-to`, shown on the page. */
  forwardTo: string;
  /** listen's `--secret`: "replay with edits" re-signs with it (the first one of several). */
  secret?: string | readonly string[] | undefined;
  /** The channel and its public URL, shown on the page. */
  channel?: string;
  channelUrl?: string;
  /** The on-disk log (JSON lines) that keeps the list across restarts, or `false` for memory only. */
  log: string | false;
  /** Exchanges kept, in memory and on disk; the oldest go first. @default 10_000 */
  maxEvents?: number;
  /** Bytes kept of each request and reply body; a longer body is kept truncated and cannot be replayed. @default 1 MiB */
  maxBodyBytes?: number;
  /** Bytes kept in all, in memory (a finished exchange's log line, bodies in base64; its bodies and headers with `log: false`), with a small allowance each; the oldest exchanges go first. @default 64 MiB */
  maxTotalBytes?: number;
  /** Time allowed to the local app for a replay. @default 8_500 */
  localTimeoutMs?: number;
  /** Largest local reply to a replay. @default 1 MiB */
  maxReplyBytes?: number;
  /** @default Date.now */
  now?: () => number;
  /** A write of the log failed (said once per failing stretch). */
  onWarning?: (message: string) => void;
}

/** What "replay with edits" changes. */
export interface ReplayEdits {
  /** The body to send instead (UTF-8 text). */
  body?: string;
  /** Set the body's top-level `delivered_at` to now, so a receiver's replay window takes it. */
  freshDeliveredAt?: boolean;
}

/** A replay the inspector cannot make; `code` is its problem code. */
export class ReplayError extends Error {
  readonly code: 'not_found' | 'replay_unavailable' | 'invalid_parameter';
  constructor(code: ReplayError['code'], message: string) {
    super(message);
    this.name = 'ReplayError';
    this.code = code;
  }
}

export interface ListenRecorderEvents {
  /** An exchange was added or its reply came: one list row. */
  exchange: [summary: ExchangeSummary, oldest: number | null];
  /** A replay made from the inspector ended. */
  replayed: [exchange: Exchange];
}

/**
 * The listen side of the inspector: records each event `listen` forwards (request headers and body as
 * sent, the reply as the sender got it), keeps them bounded in memory and in the on-disk log, and replays
 * one to the local app: the same bytes, or edited and re-signed with the secret.
 * @example
 * const recorder = await ListenRecorder.open({ forwardTo, secret, log: '.cliphook/listen.events.jsonl' });
 * recorder.attach(listener);
 */
export class ListenRecorder extends EventEmitter<ListenRecorderEvents> {
  readonly #book: ExchangeBook;
  readonly #log: ExchangeLog | null;
  readonly #pending = new WeakMap<ListenerEvent, Exchange>();
  readonly #forwarders = new Map<string, Forwarder>();
  /** Replays in flight: `close()` lets each record its outcome before the log's last write. */
  readonly #replaying = new Set<Promise<ExchangeSummary>>();
  readonly #options: Required<Omit<ListenRecorderOptions, 'secret' | 'channel' | 'channelUrl' | 'onWarning'>> & Pick<ListenRecorderOptions, 'secret' | 'channel' | 'channelUrl' | 'onWarning'>;

  private constructor(options: ListenRecorderOptions) {
    super();
    const {
      maxEvents = 10_000, maxBodyBytes = 1024 * 1024, maxTotalBytes = 64 * 1024 * 1024, localTimeoutMs = 8_500, maxReplyBytes = 1024 * 1024, now = Date.now,
    } = options;
    for (const [name, value] of Object.entries({ maxEvents, maxBodyBytes, maxTotalBytes, localTimeoutMs, maxReplyBytes })) {
      if (!(Number.isSafeInteger(value) && value > 0)) throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${JSON.stringify(value)}.`);
    }
    if (!parseUrl(options.forwardTo)) throw new TypeError(`Expected \`forwardTo\` to be a URL, got ${JSON.stringify(options.forwardTo)}.`);
    this.#options = { ...options, maxEvents, maxBodyBytes, maxTotalBytes, localTimeoutMs, maxReplyBytes, now };
    // With a log, a finished exchange is kept as its line, which the log writes; memory only, as it is.
    this.#book = new ExchangeBook({ maxEvents, maxTotalBytes, lines: options.log !== false });
    this.#log =
      options.log === false
        ? null
        : new ExchangeLog({
            file: options.log,
            maxEvents,
            maxBytes: maxTotalBytes,
            snapshot: () => this.#book.list(),
            onError: (error) => options.onWarning?.(`cannot write the inspector's log ${options.log}: ${error.message}; the list is kept in memory until a write succeeds`),
          });
  }

  /** Makes a recorder and loads what the log kept. An unreadable log is reported and started over. */
  static async open(options: ListenRecorderOptions): Promise<ListenRecorder> {
    const recorder = new ListenRecorder(options);
    if (recorder.#log) {
      try {
        for (const exchange of await recorder.#log.load()) recorder.#book.put(exchange);
      } catch (error) {
        options.onWarning?.(`cannot read the inspector's log ${String(options.log)}: ${(error as Error).message}`);
      }
    }
    return recorder;
  }

  /** What the page's header shows. */
  info() {
    const { forwardTo, channel, channelUrl, secret, maxEvents, maxBodyBytes } = this.#options;
    return { forwardTo, channel: channel ?? null, channelUrl: channelUrl ?? null, secret: secret !== undefined, maxEvents, maxBodyBytes, outcomes: OUTCOMES };
  }

  /** Records every event of `listener` and its reply. */
  attach(listener: { on<K extends keyof ListenerEvents>(name: K, handler: (...args: ListenerEvents[K]) => void): unknown }): void {
    listener.on('event', (event) => this.#onEvent(event));
    listener.on('reply', (reply) => this.#onReply(reply));
  }

  list(filter: ExchangeFilter = {}): ExchangeSummary[] {
    return this.#book.list(filter).map(summarize);
  }

  get oldest(): number | null {
    return this.#book.oldest;
  }

  get size(): number {
    return this.#book.size;
  }

  /** The exchange whole: a finished one's line parsed back. */
  detail(id: number): ReturnType<typeof detailOf> | undefined {
    const exchange = this.#book.get(id);
    return exchange && detailOf(exchangeOf(exchange));
  }

  /** Adds an exchange that is already whole (tests, imports); it is logged like the others. */
  record(exchange: Omit<Exchange, 'id'>): ExchangeSummary {
    const held = this.#book.put({ ...exchange, id: this.#book.nextId() });
    if (held instanceof ExchangeRecord) this.#log?.append(held);
    const summary = summarize(held);
    this.#changed(summary);
    return summary;
  }

  /**
   * Sends exchange `id` to the URL it went to, again: the same bytes and headers, or with `edits` (the
   * body changed, `delivered_at` made fresh) and, with a secret, a fresh `X-Service-Signature`.
   * Resolves with the new exchange once the local app answered (or could not be reached).
   */
  async replay(id: number, edits?: ReplayEdits): Promise<ExchangeSummary> {
    const run = this.#replay(id, edits);
    this.#replaying.add(run);
    try {
      return await run;
    } finally {
      this.#replaying.delete(run);
    }
  }

  async #replay(id: number, edits?: ReplayEdits): Promise<ExchangeSummary> {
    const held = this.#book.get(id);
    if (!held) throw new ReplayError('not_found', `No exchange ${id}: it was never seen, or the oldest ones made room for newer ones.`);
    const original = exchangeOf(held);
    let body = original.request.body.bytes;
    let headers: RawHeaders = original.request.headers.slice();
    let signatureValid = original.signatureValid;
    if (edits === undefined) {
      if (original.request.body.truncated) {
        throw new ReplayError('replay_unavailable', `Its body (${original.request.body.size} bytes) was larger than the ${this.#options.maxBodyBytes} bytes kept: it cannot be sent again as it was.`);
      }
      if (original.reply?.refused) {
        throw new ReplayError('replay_unavailable', `listen refused it (${original.reply.refused.code}) and never sent it to your app; "replay with edits" re-signs it with --secret.`);
      }
    } else {
      if (edits.body !== undefined && typeof edits.body !== 'string') throw new ReplayError('invalid_parameter', 'body is the text to send.');
      if (edits.body === undefined && original.request.body.truncated) throw new ReplayError('replay_unavailable', 'Its body was not kept whole: send an edited body instead.');
      if (edits.body !== undefined) body = Buffer.from(edits.body, 'utf8');
      if (edits.freshDeliveredAt === true) body = withDeliveredAt(body, this.#options.now());
      const secret = typeof this.#options.secret === 'string' ? this.#options.secret : this.#options.secret?.[0];
      if (secret !== undefined) {
        headers = withSignature(headers, sign(body, secret));
        signatureValid = true;
      } else {
        // Without the secret the old signature no longer matches edited bytes: say so rather than pretend.
        signatureValid = original.signatureValid === null ? null : body.equals(original.request.body.bytes) && original.signatureValid;
      }
    }
    const started = performance.now();
    const reply = await this.#send(original.url, original.method, headers, body).then(
      (local): Exchange['reply'] => ({ status: local.status, error: null, refused: null, stale: false, durationMs: elapsed(started), headers: local.headers, body: keep(local.body, this.#options.maxBodyBytes) }),
      (error: Error): Exchange['reply'] => {
        const { code, message } = error instanceof ForwardError ? error : new ForwardError('local_unreachable', String(error));
        return { status: null, error: { code, detail: message }, refused: null, stale: false, durationMs: elapsed(started), headers: [], body: keep(Buffer.alloc(0), 1) };
      },
    );
    const exchange: Exchange = {
      ...original,
      id: this.#book.nextId(),
      at: this.#options.now(),
      receivedAt: null,
      seq: null,
      videoId: videoIdToKeep(body, this.#options.maxBodyBytes),
      signatureValid,
      resigned: false,
      backlog: false,
      replay: false,
      replayOf: original.id,
      edited: edits !== undefined,
      request: { headers, body: keep(body, this.#options.maxBodyBytes) },
      reply,
    };
    const kept = this.#book.put(exchange);
    if (kept instanceof ExchangeRecord) this.#log?.append(kept);
    const summary = summarize(kept);
    this.#changed(summary);
    this.emit('replayed', exchange);
    return summary;
  }

  /** Writes the log lines that wait for their batch (`WRITE_AFTER_MS`) now. */
  flush(): Promise<void> {
    return this.#log?.flush() ?? Promise.resolve();
  }

  /** Writes what is queued for the log and frees the replay connections. */
  async close(): Promise<void> {
    for (const forwarder of this.#forwarders.values()) forwarder.close();
    this.#forwarders.clear();
    // A replay cut short by the closed connections still records how it ended, before the last flush.
    await Promise.allSettled(this.#replaying);
    await this.#log?.close();
  }

  /** Tells the page (if one listens: its row is made only then) of an exchange added or answered. */
  #changed(exchange: HeldExchange | ExchangeSummary): void {
    if (this.listenerCount('exchange') === 0) return;
    this.emit('exchange', exchange instanceof ExchangeRecord || 'request' in exchange ? summarize(exchange) : exchange, this.#book.oldest);
  }

  #onEvent(event: ListenerEvent): void {
    const exchange: Exchange = {
      id: this.#book.nextId(),
      at: this.#options.now(),
      receivedAt: event.receivedAt,
      seq: event.seq,
      channel: this.#options.channel ?? null,
      method: event.method,
      url: event.url,
      eventName: event.eventName,
      deliveryId: event.deliveryId,
      videoId: videoIdToKeep(event.body, this.#options.maxBodyBytes),
      signatureValid: event.signatureValid,
      resigned: event.resigned,
      backlog: event.backlog,
      replay: event.replay,
      replayOf: null,
      edited: false,
      request: { headers: event.headers, body: keep(event.body, this.#options.maxBodyBytes) },
      reply: null,
    };
    this.#pending.set(event, exchange);
    this.#book.put(exchange);
    this.#changed(exchange);
  }

  #onReply(reply: ListenerReply): void {
    const exchange = this.#pending.get(reply.event);
    if (!exchange) return;
    this.#pending.delete(reply.event);
    exchange.reply = {
      status: reply.status, error: reply.error, refused: reply.refused, stale: reply.stale, durationMs: reply.durationMs, headers: reply.headers, body: keep(reply.body, this.#options.maxBodyBytes),
    };
    // Put again, as its record (its line made now, with a log): it may have been dropped meanwhile (then it stays dropped).
    if (this.#book.get(exchange.id) !== exchange) return;
    const held = this.#book.put(exchange);
    if (held instanceof ExchangeRecord) this.#log?.append(held);
    this.#changed(held);
  }

  #send(href: string, method: string, headers: RawHeaders, body: Buffer): Promise<LocalReply> {
    const { origin, pathname, search } = new URL(href);
    let forwarder = this.#forwarders.get(origin);
    if (!forwarder) {
      forwarder = createForwarder(new URL(origin), this.#options.localTimeoutMs, this.#options.maxReplyBytes);
      this.#forwarders.set(origin, forwarder);
    }
    // The target as it was sent, as text (the URL parser would re-encode `{}'`): `targetPath` joins an
    // "extra path" to the origin's `/` unchanged.
    const target = href.startsWith(origin) ? href.slice(origin.length) || '/' : pathname + search;
    return forwarder.forward({ type: 'event', seq: 0, receivedAt: this.#options.now(), method, path: target, query: '', headers, body, backlog: false, replay: false });
  }
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

export type { Outcome };
