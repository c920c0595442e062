import { createHmac } from 'node:crypto';
import type { WebhookEmitter } from '../../../emitter/index.js';
import type { Accounts } from '../../core/accounts.js';
import type { ServiceStore } from '../../core/store.js';
import type { Video, VideoTables } from './lifecycle.js';
import { webhookPayload } from './views.js';
import { onTimeOf, type LaneClock } from '../../core/clock.js';
import type { Site } from '../../core/site.js';

export interface ClipWebhooksOptions {
  emitter: WebhookEmitter;
  accounts: Accounts;
  store: ServiceStore<VideoTables>;
  /** The service's origin, read when a webhook is made (it is known only once the server listens). */
  site: Site;
  /** Keys the delivery ids: unguessable, and the same for one clip across restarts. */
  secret: string;
  warn: (message: string) => void;
  /** Where a webhook that could not be handed over is tried again (1 s, doubling to 60 s): the service's clock. */
  clock: LaneClock;
  /** Webhook chaos, when the service made its own emitter (a custom one sends plainly). */
  chaos?: ClipChaos | undefined;
  /** Told the account of each delivery handed to the emitter (its webhook retries run on that account's time). */
  owned?: (deliveryId: string, accountId: number) => void;
  /** An account's clips (the lifecycle's index): a batch's clips share one account, so a batch is found among them. */
  clipsOf: (accountId: number) => readonly Video[];
}

/** A clip of a batch, as the out-of-order release orders them. */
export interface BatchClip {
  clipId: number;
  /** When it ended (done, error or cancelled); `null` while it runs. */
  endedAt: number | null;
  /** Whether it will send a webhook (a callback_url, not queued yet, not cancelled). */
  sendsWebhook: boolean;
}

/**
 * Webhook chaos as a clip's webhook uses it. The test controls (testing/clip-chaos.ts) provide
 * it and the composition root hands it in, so resources/ import nothing of testing/. Modes
 * are the test controls' names; an unknown one is ignored.
 */
export interface ClipChaos {
  /** The modes of a clip's webhook, each once: its prompt's markers, its account's modes, and `extra`. */
  modesOf(prompt: string | null, accountModes: readonly string[], extra?: readonly string[]): readonly string[];
  /** Out of order: `null` until every clip that sends a webhook has ended, then their ids last-to-end first. */
  releaseOrder(clips: readonly BatchClip[]): readonly number[] | null;
  /** Shapes the attempts of delivery `id` by `modes`. */
  register(id: string, delivery: { modes: readonly string[]; secret: string; previousSecret: string | undefined }): void;
  /** Resolves once delivery `id`'s first attempt has its answer. */
  firstAnswered(id: string): Promise<void>;
  stopWaiting(id: string): void;
}

/** The mode that holds a batch's webhooks and releases them last-to-end first. */
const OUT_OF_ORDER = 'webhook_out_of_order';

/** How long a batch's out-of-order release waits for one webhook's first answer before sending the next anyway. */
const RELEASE_WAIT_MS = 30_000;

const FIRST_RETRY_MS = 1_000;
const LAST_RETRY_MS = 60_000;

/**
 * Spec 6: a clip that reaches done or error with a callback_url is handed to the emitter, signed with the
 * secret of the key that created it, under one delivery id per clip, so a webhook re-sent after a crash
 * (between the emitter's save and the clip's `webhookQueued` mark) is never made twice.
 */
export class ClipWebhooks {
  readonly #options: ClipWebhooksOptions;
  /** Webhooks being handed to the emitter (its outbox write), by account. */
  readonly #sending = new Map<number, number>();
  #retry: unknown = null;
  #retryDelay = FIRST_RETRY_MS;

  constructor(options: ClipWebhooksOptions) {
    this.#options = options;
  }

  /** Whether a webhook is being queued or attempted now: `clock.advance()` waits for it. */
  get busy(): boolean {
    return this.#sending.size > 0 || this.attempting;
  }

  /** Whether the emitter has an attempt in flight, of any account. */
  get attempting(): boolean {
    // `stats` is read defensively: tests may hand in a minimal emitter that only records what it is sent.
    return ((this.#options.emitter.stats as { inFlight?: number } | undefined)?.inFlight ?? 0) > 0;
  }

  /** Whether a webhook of `account` is being handed to the emitter (what its own advance waits for). */
  sendingOf(account: number): boolean {
    return this.#sending.has(account);
  }

  #sent(account: number, step: 1 | -1): void {
    const count = (this.#sending.get(account) ?? 0) + step;
    if (count > 0) this.#sending.set(account, count);
    else this.#sending.delete(account);
  }

  /** The chaos modes of a clip's webhook: its prompt's markers and its account's modes; none without chaos. */
  modesOf(video: Video, extra: readonly string[] = []): readonly string[] {
    const { chaos, accounts } = this.#options;
    return chaos ? chaos.modesOf(video.prompt, accounts.get(video.accountId)?.webhookChaos ?? [], extra) : [];
  }

  /**
   * Hands the clip's webhook to the emitter once; a clip without callback_url, or already queued, sends
   * nothing. A clip of a batch whose webhooks go out of order waits for the batch.
   */
  async send(video: Video): Promise<void> {
    if (!video.callbackUrl || video.webhookQueued) return;
    if (video.batchId !== null && this.#options.chaos) {
      const batch = this.#batchOf(video.accountId, video.batchId);
      if (batch.some((clip) => this.modesOf(clip).includes(OUT_OF_ORDER))) return this.#releaseBatch(video.batchId, batch);
    }
    await this.#queue(video);
  }

  /** The clips of a batch, in the order they were made: among its account's clips, not every clip ever made. */
  #batchOf(accountId: number, batchId: string): Video[] {
    return this.#options.clipsOf(accountId).filter((clip) => clip.batchId === batchId).sort((a, b) => a.id - b.id);
  }

  /** Batches being released out of order now. */
  readonly #releasing = new Set<string>();

  /**
   * Out of order: once every clip of the batch that will send a webhook has ended, their webhooks go
   * last-to-end first, each after the previous one's first attempt has its answer.
   */
  async #releaseBatch(batchId: string, batch: Video[]): Promise<void> {
    if (this.#releasing.has(batchId)) return;
    const chaos = this.#options.chaos!;
    const order = chaos.releaseOrder(
      batch.map((clip) => ({
        clipId: clip.id,
        endedAt: clip.status === 'done' || clip.status === 'error' || clip.status === 'cancelled' ? (clip.completedAt ?? 0) : null,
        sendsWebhook: clip.callbackUrl !== null && !clip.webhookQueued && clip.status !== 'cancelled',
      })),
    );
    if (order === null) return;
    this.#releasing.add(batchId);
    const account = batch[0]!.accountId;
    this.#sent(account, 1);
    try {
      for (const clipId of order) {
        const clip = this.#options.store.table('video').get(clipId);
        if (!clip || clip.webhookQueued) continue;
        // Registered with the mode even when only another clip of the batch carries it: its first answer is awaited.
        const id = await this.#queue(clip, [OUT_OF_ORDER]);
        if (id === undefined) continue;
        let timer: unknown;
        const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, RELEASE_WAIT_MS).unref()));
        await Promise.race([chaos.firstAnswered(id), waited]);
        clearTimeout(timer as NodeJS.Timeout);
        chaos.stopWaiting(id);
      }
    } finally {
      this.#releasing.delete(batchId);
      this.#sent(account, -1);
    }
  }

  /** The delivery id of a clip's webhook: unguessable, and the same for one clip across restarts. */
  #deliveryId(video: Video): string {
    return `dlv_${createHmac('sha256', this.#options.secret).update(String(video.id)).digest('hex').slice(0, 24)}`;
  }

  /** Hands one clip's webhook to the emitter; the delivery id once it is queued. */
  async #queue(video: Video, batchModes: readonly string[] = []): Promise<string | undefined> {
    const { emitter, accounts, store, site, warn, chaos } = this.#options;
    const key = accounts.key(video.keyId);
    if (!key) return undefined;
    const { event, payload } = webhookPayload(video, { origin: site.origin });
    this.#sent(video.accountId, 1);
    try {
      const id = this.#deliveryId(video);
      const modes = this.modesOf(video, batchModes);
      if (modes.length > 0) chaos!.register(id, { modes, secret: key.webhookSecret, previousSecret: key.previousWebhookSecret });
      this.#options.owned?.(id, video.accountId);
      await emitter.send({ url: video.callbackUrl!, secret: key.webhookSecret, event, payload, id });
      video.webhookQueued = true;
      this.#retryDelay = FIRST_RETRY_MS;
      store.table('video').put(video);
      await store.commit();
      return id;
    } catch (error) {
      // An outbox that cannot be written (a read-only data folder) is tried again by
      // itself, so the webhook goes once the disk takes it, not only after a restart.
      warn(`cannot send the webhook of clip ${video.id} yet: ${(error as Error).message}`);
      if (!video.webhookQueued) this.#retryLater();
      return undefined;
    } finally {
      this.#sent(video.accountId, -1);
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
    // The service's own timer, not the account whose clip happened to trigger it.
    this.#retry = onTimeOf(this.#options.clock, null, () => this.#options.clock.setTimeout(() => {
      this.#retry = null;
      this.resume();
    }, delay));
  }
}
