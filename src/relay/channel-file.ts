import { JsonFile } from '../store/json-file.js';
import { decodeBody, encodeBody } from './frames.js';
import type { Channel, StoredEvent } from './channels.js';

/** An event as the data file keeps it: the body as base64. */
type SavedEvent = Omit<StoredEvent, 'body'> & { body: string };

interface ChannelDocument {
  version: 1;
  /** Events are StoredEvents on the way out (their bodies written as base64), SavedEvents read back. */
  channels: Array<Omit<Channel, 'acked'> & { acked: number[] }>;
}

/**
 * The relay's data file: every channel and its buffer in one lowdb JSON document, group-committed.
 * Events are immutable once appended, so each one's JSON is cached and a write only joins strings: a
 * busy channel does not re-serialise its whole buffer on every event.
 */
export class ChannelFile {
  readonly #file: JsonFile<ChannelDocument>;
  readonly #json = new WeakMap<StoredEvent, string>();

  constructor(file: string, channels: () => Iterable<Channel>) {
    this.#file = new JsonFile<ChannelDocument>({
      file,
      snapshot: () => ({
        version: 1,
        channels: [...channels()].map((channel) => ({ ...channel, events: [...channel.events], acked: [...channel.acked] })),
      }),
      stringify: (doc) => this.#stringify(doc),
    });
  }

  /** The channels the file holds (none when it does not exist yet). */
  async load(): Promise<Channel[]> {
    const doc = await this.#file.read();
    if (!doc) return [];
    if (doc.version !== 1 || !Array.isArray(doc.channels)) throw new Error(`${this.#file.file} is not a cliphook relay file.`);
    return doc.channels.map((saved) => {
      const events = (saved.events as unknown as SavedEvent[]).map((event) => ({ ...event, body: decodeBody(event.body) }));
      // Files from before seqLimit have none; a crash may have lost numbers up to it, never beyond.
      const nextSeq = Math.max(saved.nextSeq, saved.seqLimit ?? 0);
      return { ...saved, nextSeq, seqLimit: nextSeq, events, acked: new Set(saved.acked) };
    });
  }

  /** Resolves once the current state is on disk. */
  commit(): Promise<void> {
    return this.#file.commit();
  }

  #stringify(doc: ChannelDocument): string {
    const channels = doc.channels.map((channel) => {
      const events = channel.events.map((event) => this.#eventJson(event)).join(',');
      const { events: _events, ...head } = channel;
      return `${JSON.stringify(head).slice(0, -1)},"events":[${events}]}`;
    });
    return `{"version":1,"channels":[${channels.join(',')}]}`;
  }

  #eventJson(event: StoredEvent): string {
    let json = this.#json.get(event);
    if (json === undefined) {
      json = JSON.stringify({ ...event, body: encodeBody(event.body) });
      this.#json.set(event, json);
    }
    return json;
  }
}
