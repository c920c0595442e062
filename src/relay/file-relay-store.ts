import type { ChannelStore } from './channels.js';
import type { StoredEvent, TokenCheck } from './channel-types.js';
import { RelayStoreError, type AppendResult, type Audience, type BackendHealth, type RelayStore } from './relay-store.js';

const UNSAVED_EVENT = 'The relay cannot write its data file just now; the event was not kept.';

/**
 * The embedded default behind the `RelayStore` seam: `ChannelStore` (channels in memory, every change a
 * line of the data file, locked to one process), unchanged. Only its write failures become
 * `RelayStoreError`s with code `relay_full`, as the relay has always answered them.
 */
export class FileRelayStore implements RelayStore {
  readonly #store: ChannelStore;

  constructor(store: ChannelStore) {
    this.#store = store;
  }

  open(): Promise<void> {
    return this.#store.open();
  }

  close(): Promise<void> {
    return this.#store.close();
  }

  get health(): BackendHealth {
    const health = this.#store.health;
    if (health.ok) return { ok: true };
    const { error, since } = health;
    return { ok: false, error: (error as NodeJS.ErrnoException).code ?? 'write_failed', detail: `cannot write the data file: ${error.message}`, since };
  }

  async stats(): Promise<{ channels: number; bufferedBytes: number }> {
    return { channels: this.#store.size, bufferedBytes: this.#store.totalBytes };
  }

  async create(): Promise<{ id: string; token: string } | null> {
    const created = this.#store.create();
    if (!created) return null;
    const { channel, token } = created;
    try {
      await this.#store.commit();
    } catch (error) {
      this.#store.delete(channel.id);
      throw new RelayStoreError('relay_full', 'The relay cannot write its data file just now.', { cause: error });
    }
    return { id: channel.id, token };
  }

  async delete(id: string): Promise<'deleted' | 'unsaved' | 'not_found'> {
    if (!this.#store.delete(id)) return 'not_found';
    // Deleted in memory at once; on disk once a write succeeds (it is retried by itself).
    return (await this.#store.commit().then(() => true, () => false)) ? 'deleted' : 'unsaved';
  }

  async check(id: string, token: string | undefined): Promise<TokenCheck> {
    return this.#store.check(id, token);
  }

  has(id: string): boolean {
    return this.#store.get(id) !== undefined;
  }

  /** At once, unless the event's sequence number waits for its reservation to reach the disk. */
  append(id: string, event: Omit<StoredEvent, 'seq'>, local: Audience): AppendResult | Promise<AppendResult> {
    const channel = this.#store.get(id);
    if (!channel) return { kind: 'not_found' };
    // One process: its own listeners are every listener there is.
    if (local === 'filtered') return { kind: 'filtered' };
    const stored = this.#store.append(channel, event);
    if (typeof stored === 'string') return { kind: 'full', reason: stored };
    const result: AppendResult = { kind: 'stored', event: stored, remote: false };
    // A sequence number reaches a listener only once it is reserved on disk, or a crash could reuse it.
    const reserving = this.#store.reserved();
    if (!reserving) return result;
    return reserving.then(
      () => result,
      () => {
        this.#store.discard(channel, stored);
        throw new RelayStoreError('relay_full', UNSAVED_EVENT);
      },
    );
  }

  async keep(id: string, event: StoredEvent): Promise<void> {
    if (await this.#store.commit().then(() => true, () => false)) return;
    const channel = this.#store.get(id);
    if (channel) this.#store.discard(channel, event);
    throw new RelayStoreError('relay_full', UNSAVED_EVENT);
  }

  ack(id: string, seq: number): void {
    const channel = this.#store.get(id);
    if (channel && this.#store.ack(channel, seq)) this.#store.commitSoon();
  }

  async unacked(id: string, wants: (event: StoredEvent) => boolean): Promise<StoredEvent[]> {
    const channel = this.#store.get(id);
    return channel ? this.#store.unacked(channel, wants) : [];
  }

  async find(id: string, ref: string): Promise<StoredEvent | undefined> {
    const channel = this.#store.get(id);
    return channel ? this.#store.find(channel, ref) : undefined;
  }
}
