import { CliphookError } from '../protocol/errors.js';
import type { AppendRefusal, StoredEvent, TokenCheck } from './channel-types.js';

/**
 * The seam between the relay's HTTP and WebSocket code (server, ingress, hub) and where its channels and
 * buffers live: the data file of one process (`FileRelayStore`) or a Redis shared by several relay
 * processes (`RedisRelayStore`). Channels are named by id; every method is async because
 * Redis is a round trip away, and resolves only once what it promises holds in the backend.
 */
export interface RelayStore {
  /** Loads the data file, or connects to Redis. */
  open(): Promise<void>;
  /** Writes what is pending and lets go of the file or the connection. */
  close(): Promise<void>;
  /** Whether the backend takes writes just now: `/healthz` shows it. */
  readonly health: BackendHealth;
  /** For `/healthz`: channels held and base64 body bytes buffered across them (the last figures known while the backend is down). */
  stats(): Promise<{ channels: number; bufferedBytes: number }>;
  /** Creates a channel, kept once this resolves; `null` at `maxChannels`. The token is returned once and only its hash kept. */
  create(): Promise<{ id: string; token: string } | null>;
  /** `unsaved`: gone for every request already, but not yet on disk (the file store retries the write by itself). */
  delete(id: string): Promise<'deleted' | 'unsaved' | 'not_found'>;
  /** Checks a listening token against the stored hash in constant time. */
  check(id: string, token: string | undefined): Promise<TokenCheck>;
  /** Whether the channel exists, before the ingress reads a body (`append` checks again). At once where it can be (the file store). */
  has(id: string): Promise<boolean> | boolean;
  /**
   * Numbers and keeps an event, unless the bounds refuse it (`full`) or listeners are connected and none
   * wants it (`filtered`, not kept). `local` is what this process's own listeners make of it. Once it
   * resolves `stored`, the sequence number is safe to hand out: it can never be given to another event.
   */
  append(id: string, event: Omit<StoredEvent, 'seq'>, local: Audience): Promise<AppendResult> | AppendResult;
  /** Resolves once a stored event is durable (before a sender hears "buffered"); rejects, having dropped it, when it cannot be. */
  keep(id: string, event: StoredEvent): Promise<void>;
  /**
   * Marks an event acknowledged: it is never sent again on a catch-up. Durable soon after, not at once (a loss
   * costs a redelivery). The file store answers at once, with no promise (else three promises per event).
   */
  ack(id: string, seq: number): Promise<void> | void;
  /** Unacknowledged events, oldest first, that pass `wants`: what a listener is sent on connecting. */
  unacked(id: string, wants: (event: StoredEvent) => boolean): Promise<StoredEvent[]>;
  /** The buffered event named by a sequence number or by its delivery id (the latest such), for `--replay`. */
  find(id: string, ref: string): Promise<StoredEvent | undefined>;
}

/** Who would take an event: no listener connected, listeners whose `--events` filters all leave it out, or one that wants it. */
export type Audience = 'none' | 'filtered' | 'wanted';

export type AppendResult =
  /** `remote`: a listener connected to another relay process wants it, so it is published to them. */
  | { kind: 'stored'; event: StoredEvent; remote: boolean }
  | { kind: 'filtered' }
  | { kind: 'not_found' }
  | { kind: 'full'; reason: AppendRefusal };

/** What `/healthz` shows of the backend under `persistence`. */
export type BackendHealth = { ok: true } | { ok: false; error: string; detail: string; since: number };

/**
 * The backend could not do what was asked: `relay_full` (507) when the data file or Redis refuses writes
 * for lack of room, `relay_unavailable` (503) while Redis cannot be reached. The message is the `detail`
 * a sender or caller reads, so it names no host or path.
 */
export class RelayStoreError extends CliphookError {
  declare readonly code: 'relay_full' | 'relay_unavailable';
  constructor(code: 'relay_full' | 'relay_unavailable', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
