import { createHash } from 'node:crypto';
import type { LineFileIo } from '../store/line-file-io.js';
import type { EventFrame } from './frames.js';
import type { Scheduler } from './heartbeat.js';

/**
 * One request taken at `/in/<channel>`, as the relay keeps it until it is acknowledged and aged out: the
 * request members of its event frame (the data file keeps `body` as base64), plus what filters need.
 */
export interface StoredEvent extends Omit<EventFrame, 'type' | 'backlog' | 'replay'> {
  /** `X-Service-Event`, for `--events` filters. */
  eventName: string | null;
  /** `X-Service-Delivery`, for `--replay <delivery id>`. */
  deliveryId: string | null;
}

export interface Channel {
  readonly id: string;
  readonly tokenHash: string;
  readonly createdAt: number;
  nextSeq: number;
  /**
   * Numbers below this are reserved in the data file before any is handed out, so a relay that crashed
   * before saving its latest events starts above every number a listener may have seen.
   */
  seqLimit: number;
  /** Oldest first; acknowledged ones stay (for `--replay`) until the count or age bound drops them. */
  events: StoredEvent[];
  acked: Set<number>;
}

export interface ChannelStoreOptions {
  /** The data file (a snapshot of lines, and `<file>.journal`), or `false` for memory only. */
  file: string | false;
  clock: () => number;
  maxEvents: number;
  /** Base64 body bytes kept per channel. */
  maxBytes: number;
  maxAgeMs: number;
  scheduler: Scheduler;
  /** How long acknowledgements may wait before they are written: losing them only means a redelivery. */
  lazyCommitMs: number;
  /** Sequence numbers reserved per write of the high-water mark: 1 writes before every event. @default 1 */
  seqBlock?: number;
  /** Channels the relay holds at most. @default Infinity */
  maxChannels?: number;
  /** Base64 body bytes kept across every channel. @default Infinity */
  maxTotalBytes?: number;
  /** The data file's writes: a seam for tests. @default node:fs */
  io?: LineFileIo;
  /** Journal bytes before a compaction, at least. @default 67_108_864 */
  compactAfterBytes?: number;
  /** How long after a failed write the next one is tried by itself. @default 5_000 */
  retryMs?: number;
  /** Told once when writes start failing and once when they recover. */
  log?: { info(message: string): void; warn(message: string): void };
}

/** Why `append` refused an event: a bound of the channel or of the relay. */
export type AppendRefusal = 'channel_events' | 'channel_bytes' | 'relay_bytes';

/** Whether the data file takes writes: `/healthz` shows it. */
export type StoreHealth = { ok: true } | { ok: false; error: Error; since: number };

/** The outcome of checking a listening token. */
export type TokenCheck = 'ok' | 'not_found' | 'invalid_token';

/** What `body` takes as base64: the bounds count bytes as the data file keeps them. */
export function base64Length(body: Uint8Array): number {
  return Math.ceil(body.length / 3) * 4;
}

/** Where `seq` is in `events` (ascending by seq, as appended), or -1: a binary search, as a full buffer holds 1,000. */
export function indexOfSeq(events: readonly StoredEvent[], seq: number): number {
  let low = 0;
  let high = events.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const found = events[middle]!.seq;
    if (found === seq) return middle;
    if (found < seq) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
