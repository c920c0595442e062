import { createHmac } from 'node:crypto';
import type { WebhookEmitter } from '../../emitter/index.js';
import type { Accounts } from '../accounts.js';
import type { ServiceStore } from '../state.js';
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
}

/**
 * Spec 6: a clip that reaches done or error with a callback_url is handed to the emitter, signed with the
 * secret of the key that created it, under one delivery id per clip, so a webhook re-sent after a crash
 * (between the emitter's save and the clip's `webhookQueued` mark) is never made twice.
 */
export class ClipWebhooks {
  readonly #options: ClipWebhooksOptions;
  /** Webhooks being handed to the emitter (its outbox write). */
  #sending = 0;

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
      store.table('video').put(video);
      await store.commit();
    } catch (error) {
      warn(`cannot send the webhook of clip ${video.id}: ${(error as Error).message}`);
    } finally {
      this.#sending--;
    }
  }

  /** After a restart: the webhooks of finished clips that were not queued yet. */
  resume(): void {
    for (const video of this.#options.store.table('video').values()) {
      if ((video.status === 'done' || video.status === 'error') && video.callbackUrl && !video.webhookQueued) void this.send(video);
    }
  }
}
