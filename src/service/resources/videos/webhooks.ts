import { createHmac } from 'node:crypto';
import type { WebhookEmitter } from '../../../emitter/index.js';
import type { Accounts } from '../../core/accounts.js';
import type { ServiceStore } from '../../core/store.js';
import type { Video, VideoTables } from './lifecycle.js';
import { webhookPayload } from './views.js';

export interface ClipWebhooksOptions {
  emitter: WebhookEmitter;
  accounts: Accounts;
  store: ServiceStore<VideoTables>;
  /** The service's origin, read when a webhook is made (it is known only once the server listens). */
  origin: () => string;
  /** Keys the delivery ids: unguessable, and the same for one clip across restarts. */
  secret: string;
  warn: (message: string) => void;
  /** Where a webhook that could not be handed over is tried again (1 s, doubling to 60 s): the service's clock. */
  clock: { setTimeout(callback: () => void, ms: number): unknown; clearTimeout(handle: unknown): void };
}

const FIRST_RETRY_MS = 1_000;
const LAST_RETRY_MS = 60_000;

/**
 * Spec 6: a clip that reaches done or error with a callback_url is handed to the emitter, signed with the
 * secret of the key that created it, under one delivery id per clip, so a webhook re-sent after a crash
 * (between the emitter's save and the clip's `webhookQueued` mark) is never made twice.
 */
export class ClipWebhooks {
  readonly #options: ClipWebhooksOptions;
  /** Webhooks being handed to the emitter (its outbox write). */
  #sending = 0;
  #retry: unknown = null;
  #retryDelay = FIRST_RETRY_MS;

  constructor(options: ClipWebhooksOptions) {
    this.#options = options;
  }

  /** Whether a webhook is being queued or attempted now: `clock.advance()` waits for it. */
  get busy(): boolean {
    // `stats` is read defensively: tests may hand in a minimal emitter that only records what it is sent.
    const inFlight = (this.#options.emitter.stats as { inFlight?: number } | undefined)?.inFlight ?? 0;
    return this.#sending > 0 || inFlight > 0;
  }

  /** Hands the clip's webhook to the emitter once; a clip without callback_url, or already queued, sends nothing. */
  async send(video: Video): Promise<void> {
    const { emitter, accounts, store, origin, secret, warn } = this.#options;
    if (!video.callbackUrl || video.webhookQueued) return;
    const key = accounts.key(video.keyId);
    if (!key) return;
    const { event, payload } = webhookPayload(video, { origin: origin() });
    this.#sending++;
    try {
      const id = `dlv_${createHmac('sha256', secret).update(String(video.id)).digest('hex').slice(0, 24)}`;
      await emitter.send({ url: video.callbackUrl, secret: key.webhookSecret, event, payload, id });
      video.webhookQueued = true;
      this.#retryDelay = FIRST_RETRY_MS;
      store.table('video').put(video);
      await store.commit();
    } catch (error) {
      // Issue 20 item 9: an outbox that cannot be written (a read-only data folder) is tried again by
      // itself, so the webhook goes once the disk takes it, not only after a restart.
      warn(`cannot send the webhook of clip ${video.id} yet: ${(error as Error).message}`);
      if (!video.webhookQueued) this.#retryLater();
    } finally {
      this.#sending--;
    }
  }

  /** After a restart, or once writes work again: the webhooks of finished clips that were not queued yet. */
  resume(): void {
    for (const video of this.#options.store.table('video').values()) {
      if ((video.status === 'done' || video.status === 'error') && video.callbackUrl && !video.webhookQueued) void this.send(video);
    }
  }

  /** Stops the retry timer (the service is closing). */
  stop(): void {
    if (this.#retry !== null) this.#options.clock.clearTimeout(this.#retry);
    this.#retry = null;
  }

  #retryLater(): void {
    if (this.#retry !== null) return;
    const delay = this.#retryDelay;
    this.#retryDelay = Math.min(LAST_RETRY_MS, delay * 2);
    this.#retry = this.#options.clock.setTimeout(() => {
      this.#retry = null;
      this.resume();
    }, delay);
  }
}
