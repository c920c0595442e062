import { chmod } from 'node:fs/promises';
import { JsonFile } from '../store/json-file.js';

/** A relay channel a command made and keeps, so its URL stays the same across runs. */
export interface SavedChannel {
  channel: string;
  /** The listening token: a secret, shown once by the relay. */
  token: string;
  url: string;
}

interface ChannelStateFile {
  /** One channel per relay URL, so switching relays does not lose the other's URL. */
  relays: Record<string, SavedChannel>;
}

/**
 * The channels kept in `file`: `listen --state` (`.cliphook/listen.json`) and `cliphook dev`
 * (`<data>/listen.json`) share the format.
 */
export class ChannelState {
  readonly file: string;
  #state: ChannelStateFile = { relays: {} };
  readonly #json: JsonFile<ChannelStateFile>;

  private constructor(file: string) {
    this.file = file;
    this.#json = new JsonFile<ChannelStateFile>({ file, snapshot: () => this.#state });
  }

  static async open(file: string): Promise<ChannelState> {
    const state = new ChannelState(file);
    const read = await state.#json.read();
    if (read && typeof read.relays === 'object' && read.relays !== null) state.#state = read;
    return state;
  }

  /** The channel kept for `relayUrl`, if any. */
  get(relayUrl: string): SavedChannel | undefined {
    return this.#state.relays[relayUrl];
  }

  /** Keeps `channel` for `relayUrl`, in a file only this user may read (it holds the listening token). */
  async save(relayUrl: string, channel: SavedChannel): Promise<SavedChannel> {
    this.#state.relays[relayUrl] = { channel: channel.channel, token: channel.token, url: channel.url };
    await this.#json.commit();
    await chmod(this.file, 0o600).catch(() => undefined);
    return this.#state.relays[relayUrl];
  }
}
