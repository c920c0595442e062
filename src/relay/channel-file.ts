import { FileLock } from '../store/file-lock.js';
import { LineJournal, type RetryTimers } from '../store/line-journal.js';
import type { LineFileIo } from '../store/line-file-io.js';
import { decodeBody, encodeBody, headersJson } from './frames.js';
import type { Channel, StoredEvent } from './channel-types.js';

/** The first line of a version 2 data file. */
export const RELAY_FILE_HEADER = '{"cliphook":"relay","version":2}';

/**
 * One line of the data file (snapshot and journal alike), one change each, so a write costs the size of
 * the change (one JSON document of every buffer costs 0.85 s per write at 167 MB and fails
 * for good past V8's ~512 MiB string limit). Replaying a line twice changes nothing.
 */
type Line =
  | { op: 'channel'; id: string; tokenHash: string; createdAt: number; nextSeq: number; seqLimit: number }
  | { op: 'reserve'; ch: string; seqLimit: number }
  | ({ op: 'event'; ch: string; body: string } & Omit<StoredEvent, 'body'>)
  | { op: 'ack'; ch: string; seqs: number[] }
  | { op: 'drop'; ch: string; seqs: number[] }
  | { op: 'delete'; ch: string };

/** The version 1 document: every channel and its buffer in one JSON value (bodies as base64). */
interface LegacyDocument {
  version: 1;
  channels: Array<Omit<Channel, 'acked' | 'events'> & { acked: number[]; events: Array<Omit<StoredEvent, 'body'> & { body: string }> }>;
}

export interface ChannelFileOptions {
  file: string;
  channels: () => Iterable<Channel>;
  /** Whether an event is still buffered: one dropped before its line was written is not written at all. */
  holds: (channel: Channel, event: StoredEvent) => boolean;
  io?: LineFileIo;
  timers: RetryTimers;
  clock: () => number;
  compactAfterBytes?: number;
  retryMs?: number;
  /** Told once when writes start failing, once when they recover, and about unreadable lines at load. */
  log?: { info(message: string): void; warn(message: string): void };
}

/**
 * The relay's data file: a snapshot of lines and an append-only journal (`LineJournal`). The store
 * reports each change here; this turns it into a line, and loads the lines (or a version 1 document,
 * rewritten in this format at the first commit) back into channels.
 */
export class ChannelFile {
  readonly #journal: LineJournal;
  readonly #log: { info(message: string): void; warn(message: string): void } | undefined;
  readonly #holds: (channel: Channel, event: StoredEvent) => boolean;
  /** Acknowledged sequence numbers by channel since the last write: one `ack` line each per write. */
  readonly #acks = new Map<string, number[]>();
  #lock: FileLock | null = null;

  constructor({ file, channels, holds, io, timers, clock, compactAfterBytes, retryMs, log }: ChannelFileOptions) {
    this.#log = log;
    this.#holds = holds;
    this.#journal = new LineJournal({
      file,
      header: RELAY_FILE_HEADER,
      snapshot: () => snapshotLines(channels),
      timers,
      clock,
      ...(io ? { io } : {}),
      ...(compactAfterBytes ? { compactAfterBytes } : {}),
      ...(retryMs ? { retryMs } : {}),
      onHealth: (failure) => {
        if (failure) log?.warn(`cannot write ${file}: ${failure.message}; new events are refused with 507 relay_full until a write succeeds (retried by itself)`);
        else log?.info(`writes to ${file} succeed again`);
      },
      onCompactionFailed: (error) => log?.warn(`cannot rewrite ${file} (${error.message}); changes go on to ${file}.journal`),
      // After every queued line, so each event's line comes before its acknowledgement (a line per
      // acknowledgement would be a JSON document and a buffer per event).
      tail: () => this.#ackLines(),
    });
  }

  get file(): string {
    return this.#journal.file;
  }

  /** `null` while writes succeed. */
  get failure(): { error: Error; since: number } | null {
    return this.#journal.failure;
  }

  /** Takes the file's lock and reads the channels it holds (none when it does not exist yet). */
  async open(): Promise<Channel[]> {
    // One process per file, as the delivery store: two relays on one file would lose each other's events.
    this.#lock = FileLock.acquire(this.file, 'RelayServer');
    try {
      return await this.#load();
    } catch (error) {
      // The journal was opened by read(): a file refused here must not leave its handle to the garbage
      // collector (DEP0137). Nothing is queued yet, so closing writes nothing.
      await this.#journal.close().catch(() => undefined);
      this.#releaseLock();
      throw error;
    }
  }

  async #load(): Promise<Channel[]> {
    const { snapshot, journal } = await this.#journal.read();
    const channels = new Map<string, Loading>();
    let bad = 0;
    const apply = (text: string) => {
      if (text === '') return;
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        bad++;
        return;
      }
      applyLine(channels, line);
    };
    let legacy: string[] | null = null;
    let first = true;
    for await (const text of snapshot ?? []) {
      if (first) {
        first = false;
        if (text !== RELAY_FILE_HEADER) legacy = [text];
      } else if (legacy) legacy.push(text);
      else apply(text);
    }
    if (legacy) {
      for (const channel of loadLegacy(legacy.join('\n'), this.file)) channels.set(channel.id, { channel, events: new Map(channel.events.map((event) => [event.seq, event])) });
      this.#journal.rewriteSoon();
    }
    for await (const text of journal ?? []) apply(text);
    if (bad > 0) this.#log?.warn(`${this.file}: skipped ${bad} unreadable line(s) (a write cut short by a crash)`);
    return [...channels.values()].map(({ channel, events }) => {
      channel.events = [...events.values()].sort((a, b) => a.seq - b.seq);
      // A crash may have lost events up to the reserved limit, never beyond: start above it.
      const next = Math.max(channel.nextSeq, channel.seqLimit, (channel.events.at(-1)?.seq ?? 0) + 1);
      channel.nextSeq = next;
      channel.seqLimit = next;
      return channel;
    });
  }

  created(channel: Channel): void {
    this.#queue({ op: 'channel', id: channel.id, tokenHash: channel.tokenHash, createdAt: channel.createdAt, nextSeq: channel.nextSeq, seqLimit: channel.seqLimit });
  }

  reserved(channel: Channel): void {
    this.#queue({ op: 'reserve', ch: channel.id, seqLimit: channel.seqLimit });
  }

  /**
   * Made when written: the event stays in memory anyway, and its line (its body as base64) need not wait as
   * a string until the next write; one dropped meanwhile is not written at all. Its headers' JSON is taken
   * now, made once for the frame too.
   */
  appended(channel: Channel, event: StoredEvent): void {
    const headers = headersJson(event.headers);
    this.#journal.queue(() => (this.#holds(channel, event) ? eventLine(channel.id, event, headers) : null));
  }

  /** Written with the next commit, in one line per channel (see `#ackLines`). */
  acked(channel: Channel, seqs: number[]): void {
    const pending = this.#acks.get(channel.id);
    if (pending) for (const seq of seqs) pending.push(seq);
    else this.#acks.set(channel.id, seqs.slice());
  }

  dropped(channel: Channel, seqs: number[]): void {
    if (seqs.length > 0) this.#queue({ op: 'drop', ch: channel.id, seqs });
  }

  deleted(id: string): void {
    this.#queue({ op: 'delete', ch: id });
  }

  /** Resolves once every change reported so far is on disk; rejects when the write failed (it is retried). */
  commit(): Promise<void> {
    return this.#journal.commit();
  }

  /** Writes what is pending, closes the journal and releases the lock. */
  async close(): Promise<void> {
    try {
      await this.#journal.close();
    } finally {
      this.#releaseLock();
    }
  }

  #releaseLock(): void {
    this.#lock?.release();
    this.#lock = null;
  }

  #queue(line: Line): void {
    this.#journal.queue(JSON.stringify(line));
  }

  #ackLines(): string[] {
    const lines: string[] = [];
    for (const [ch, seqs] of this.#acks) lines.push(JSON.stringify({ op: 'ack', ch, seqs } satisfies Line));
    this.#acks.clear();
    return lines;
  }
}

const json = JSON.stringify;

/**
 * `{"op":"event","ch",…event,"body":"<base64>"}`, the members in the order of `StoredEvent`, joined by
 * hand: one line per event, and spreading the event into a new object to stringify it cost twice as much.
 */
function eventLine(ch: string, event: StoredEvent, headers = headersJson(event.headers)): string {
  const { seq, receivedAt, method, path, query, body, eventName, deliveryId } = event;
  return `{"op":"event","ch":${json(ch)},"seq":${seq},"receivedAt":${json(receivedAt)},"method":${json(method)},"path":${json(path)},"query":${json(query)},"headers":${headers},"body":"${encodeBody(body)}","eventName":${json(eventName)},"deliveryId":${json(deliveryId)}}`;
}

/** Every channel as lines, one event at a time: compaction streams them and never holds them all. */
function* snapshotLines(channels: () => Iterable<Channel>): Iterable<string> {
  for (const channel of [...channels()]) {
    const { id, tokenHash, createdAt, nextSeq, seqLimit } = channel;
    yield JSON.stringify({ op: 'channel', id, tokenHash, createdAt, nextSeq, seqLimit } satisfies Line);
    // Copies: compaction writes while requests go on, and a removal would shift a live array under the loop.
    const events = [...channel.events];
    const acked = [...channel.acked];
    for (const event of events) yield eventLine(id, event);
    if (acked.length > 0) yield JSON.stringify({ op: 'ack', ch: id, seqs: acked } satisfies Line);
  }
}

/** A channel while loading: its events by sequence number, so replaying a line is O(1) per event. */
interface Loading {
  channel: Channel;
  events: Map<number, StoredEvent>;
}

function applyLine(channels: Map<string, Loading>, line: Line): void {
  if (line.op === 'channel') {
    const known = channels.get(line.id)?.channel;
    if (known) known.seqLimit = Math.max(known.seqLimit, line.seqLimit);
    else {
      const channel: Channel = { id: line.id, tokenHash: line.tokenHash, createdAt: line.createdAt, nextSeq: line.nextSeq, seqLimit: line.seqLimit, events: [], acked: new Set() };
      channels.set(line.id, { channel, events: new Map() });
    }
    return;
  }
  const loading = channels.get(line.ch);
  if (!loading) return;
  const { channel, events } = loading;
  switch (line.op) {
    case 'reserve':
      channel.seqLimit = Math.max(channel.seqLimit, line.seqLimit);
      return;
    case 'event': {
      if (events.has(line.seq)) return;
      const { op: _op, ch: _ch, body, ...event } = line;
      events.set(line.seq, { ...event, body: decodeBody(body) });
      channel.nextSeq = Math.max(channel.nextSeq, line.seq + 1);
      return;
    }
    case 'ack':
      for (const seq of line.seqs) if (events.has(seq)) channel.acked.add(seq);
      return;
    case 'drop':
      for (const seq of line.seqs) {
        events.delete(seq);
        channel.acked.delete(seq);
      }
      return;
    case 'delete':
      channels.delete(line.ch);
      return;
  }
}

/** A version 1 document's channels (files from before seqLimit have none: a crash lost numbers up to it). */
function loadLegacy(text: string, file: string): Channel[] {
  let doc: LegacyDocument;
  try {
    doc = JSON.parse(text) as LegacyDocument;
  } catch (error) {
    throw new Error(`Cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (doc?.version !== 1 || !Array.isArray(doc.channels)) throw new Error(`${file} is not a cliphook relay file.`);
  return doc.channels.map((saved) => {
    const events = saved.events.map((event) => ({ ...event, body: decodeBody(event.body) }));
    const nextSeq = Math.max(saved.nextSeq, saved.seqLimit ?? 0);
    return { ...saved, nextSeq, seqLimit: nextSeq, events, acked: new Set(saved.acked) };
  });
}
