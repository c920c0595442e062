import { EventEmitter } from 'node:events';
import type { Delivery, DeliveryAttempt, DeliveryState } from '../emitter/types.js';
import { DeliveryNotFoundError } from '../protocol/errors.js';
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS } from '../protocol/schedule.js';
import type { ImageJob } from '../service/resources/images/job.js';
import type { Service } from '../service/service.js';
import type { Video } from '../service/resources/videos/lifecycle.js';

/** One row of the deliveries list. */
export interface DeliverySummary {
  id: string;
  event: string;
  url: string;
  state: DeliveryState;
  createdAt: number;
  attempts: number;
  last: { at: number; status: number | null; error: string | null; latencyMs: number } | null;
  nextAttemptAt: number | null;
  videoId: string | null;
}

export interface ClipSummary {
  id: number;
  accountId: number;
  status: Video['status'];
  progress: string | null;
  prompt: string;
  model: string;
  duration: number;
  createdAt: number;
  completedAt: number | null;
  errorCode: string | null;
  callbackUrl: string | null;
  retryOf: number | null;
}

export interface ImageSummary {
  id: number;
  accountId: number;
  status: ImageJob['status'];
  type: string;
  template: string | null;
  description: string;
  images: number;
  count: number;
  createdAt: number;
  completedAt: number | null;
  errorCode: string | null;
}

export interface ServiceFeedEvents {
  delivery: [summary: DeliverySummary];
  clip: [summary: ClipSummary];
  image: [summary: ImageSummary];
}

/** Rows a list answers at most: the newest. */
const MAX_ROWS = 10_000;

/**
 * What the inspector reads of the running service (the few collaborators it needs, not the
 * whole `Service`): its emitter, the clips' and image jobs' state and rows, its clock and origin.
 */
export type ServiceFeedParts = Pick<Service, 'emitter' | 'state' | 'store' | 'clock' | 'origin'>;

/**
 * The service side of the inspector: clips and image jobs with their states, and the webhook deliveries
 * of its emitter with every attempt, read from the running service and told to the page as they change.
 * Redeliver goes through the emitter's `redeliver`.
 * @example const feed = new ServiceFeed(app.service); feed.on('delivery', (row) => …); feed.close();
 */
export class ServiceFeed extends EventEmitter<ServiceFeedEvents> {
  readonly #service: ServiceFeedParts;
  /** What the page was last told of each delivery, so a scan tells only what changed. */
  readonly #told = new Map<string, string>();
  readonly #undo: Array<() => void> = [];
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(service: ServiceFeedParts) {
    super();
    this.#service = service;
    const onAttempt = (delivery: Delivery) => this.#tell(delivery);
    service.emitter.on('attempt', onAttempt);
    this.#undo.push(() => service.emitter.off('attempt', onAttempt));
    const onChange = (video: Video) => this.emit('clip', clipSummary(video));
    // A finished clip's webhook is queued a moment later (after its outbox write): look for it then.
    const onTerminal = () => this.#scanSoon();
    service.state.videos.on('change', onChange);
    service.state.videos.on('terminal', onTerminal);
    this.#undo.push(() => service.state.videos.off('change', onChange), () => service.state.videos.off('terminal', onTerminal));
    const onEnded = (job: ImageJob) => this.emit('image', imageSummary(job));
    service.state.images.on('ended', onEnded);
    this.#undo.push(() => service.state.images.off('ended', onEnded));
  }

  /** The service's clock: every time on the page is read against it (it may have been advanced). */
  now(): number {
    return this.#service.clock.now();
  }

  info() {
    return { origin: this.#service.origin, schedule: [0, ...RETRY_SCHEDULE_MS], maxAttempts: MAX_ATTEMPTS, now: this.now() };
  }

  deliveries({ state, limit = MAX_ROWS }: { state?: DeliveryState; limit?: number } = {}): DeliverySummary[] {
    return this.#service.emitter.list({ ...(state ? { state } : {}), limit }).map(deliverySummary);
  }

  /** A delivery with its attempts, each placed on the retry schedule, and the slot of the next one. */
  delivery(id: string) {
    const delivery = this.#service.emitter.get(id);
    return delivery && deliveryDetail(delivery);
  }

  /** Sends it again now with the same id (a fresh schedule), as `cliphook deliveries redeliver` does. */
  async redeliver(id: string): Promise<DeliverySummary | undefined> {
    try {
      const queued = await this.#service.emitter.redeliver(id);
      // Read again: the attempt may have ended (and been told) while the redelivery was saved, and
      // telling the older view now would leave the page showing it.
      const delivery = this.#service.emitter.get(id) ?? queued;
      this.#tell(delivery);
      return deliverySummary(delivery);
    } catch (error) {
      if (error instanceof DeliveryNotFoundError) return undefined;
      throw error;
    }
  }

  clips({ limit = 500 }: { limit?: number } = {}): ClipSummary[] {
    return newest(this.#service.store.table('video'), this.#service.store.lastId('video'), limit).map(clipSummary);
  }

  images({ limit = 500 }: { limit?: number } = {}): ImageSummary[] {
    return newest(this.#service.store.table('image_job'), this.#service.store.lastId('image_job'), limit).map(imageSummary);
  }

  close(): void {
    for (const undo of this.#undo.splice(0)) undo();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #tell(delivery: Delivery): void {
    const summary = deliverySummary(delivery);
    this.#told.set(summary.id, fingerprint(summary));
    this.emit('delivery', summary);
  }

  #scanSoon(): void {
    for (const ms of [25, 250, 1000]) {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.#scan();
      }, ms);
      timer.unref();
      this.#timers.add(timer);
    }
  }

  /** Tells the page of the newest deliveries that changed since it was last told (new ones included). */
  #scan(): void {
    for (const summary of this.deliveries({ limit: 50 })) {
      const print = fingerprint(summary);
      if (this.#told.get(summary.id) === print) continue;
      this.#told.set(summary.id, print);
      this.emit('delivery', summary);
    }
    // Bounded: only ids the emitter still holds are remembered.
    if (this.#told.size > 2 * MAX_ROWS) for (const id of this.#told.keys()) if (!this.#service.emitter.get(id)) this.#told.delete(id);
  }
}

function fingerprint(summary: DeliverySummary): string {
  return `${summary.state}|${summary.attempts}|${summary.nextAttemptAt}`;
}

/**
 * The `limit` rows of highest id, newest first. Ids only grow, so it reads down from the last one given: the
 * cost is the rows answered (and the ids removed among them), not every row ever kept. Only when far more ids
 * than that were removed does it sort the table instead.
 */
export function newest<T extends { id: number }>(table: { readonly size: number; get(id: number): T | undefined; values(): Iterable<T> }, lastId: number, limit: number): T[] {
  const rows: T[] = [];
  const want = Math.min(limit, table.size);
  const budget = 4 * want + 1_000;
  for (let id = lastId, looked = 0; id >= 1 && rows.length < want; id--, looked++) {
    if (looked === budget) return [...table.values()].sort((a, b) => b.id - a.id).slice(0, limit);
    const row = table.get(id);
    if (row) rows.push(row);
  }
  return rows;
}

function idOf(payload: Record<string, unknown>): string | null {
  return typeof payload.id === 'number' || typeof payload.id === 'string' ? String(payload.id) : null;
}

export function deliverySummary(delivery: Delivery): DeliverySummary {
  const last = delivery.attempts.at(-1);
  return {
    id: delivery.id,
    event: delivery.event,
    url: delivery.url,
    state: delivery.state,
    createdAt: delivery.createdAt,
    attempts: delivery.attempts.length,
    last: last ? { at: last.at, status: last.status, error: last.error, latencyMs: last.latencyMs } : null,
    nextAttemptAt: delivery.nextAttemptAt,
    videoId: idOf(delivery.payload),
  };
}

/**
 * Where the next attempt falls on the schedule (30 s, 2 min, 10 min, 30 min, 2 h after the previous one):
 * the slot whose delay is nearest to the wait the emitter set, as the public view does not carry the round.
 */
export function nextSlot(delivery: Pick<Delivery, 'attempts' | 'nextAttemptAt' | 'state'>): { slot: number; delayMs: number; at: number } | null {
  const last = delivery.attempts.at(-1);
  if (delivery.state !== 'pending' || delivery.nextAttemptAt === null) return null;
  if (!last) return { slot: 1, delayMs: 0, at: delivery.nextAttemptAt };
  const waited = delivery.nextAttemptAt - (last.at + last.latencyMs);
  let best = 0;
  for (let i = 1; i < RETRY_SCHEDULE_MS.length; i++) if (Math.abs(RETRY_SCHEDULE_MS[i]! - waited) < Math.abs(RETRY_SCHEDULE_MS[best]! - waited)) best = i;
  // A redelivery waits nothing: it is a new round's first attempt.
  if (waited < RETRY_SCHEDULE_MS[0]! / 2) return { slot: 1, delayMs: 0, at: delivery.nextAttemptAt };
  return { slot: best + 2, delayMs: RETRY_SCHEDULE_MS[best]!, at: delivery.nextAttemptAt };
}

/**
 * The slot of the schedule each attempt took: 1 for the first, then the slot whose delay matches the wait
 * after the previous attempt (within 10 %), or 1 again for an attempt that came sooner (a redelivery,
 * which starts a new round). Inferred, as the public view of a delivery does not carry its rounds.
 */
export function attemptSlots(attempts: readonly DeliveryAttempt[]): number[] {
  const slots: number[] = [];
  for (let i = 0; i < attempts.length; i++) {
    const previous = attempts[i - 1];
    if (!previous) {
      slots.push(1);
      continue;
    }
    const waited = attempts[i]!.at - (previous.at + previous.latencyMs);
    const match = RETRY_SCHEDULE_MS.findIndex((delay) => Math.abs(waited - delay) <= delay / 10);
    slots.push(match === -1 ? 1 : match + 2);
  }
  return slots;
}

function deliveryDetail(delivery: Delivery) {
  const slots = attemptSlots(delivery.attempts);
  return {
    ...deliverySummary(delivery),
    retry: delivery.retry,
    payload: delivery.payload,
    attempts: delivery.attempts.map((attempt: DeliveryAttempt, index) => ({ n: index + 1, slot: slots[index]!, ...attempt })),
    next: nextSlot(delivery),
  };
}

export function clipSummary(video: Video): ClipSummary {
  return {
    id: video.id,
    accountId: video.accountId,
    status: video.status,
    progress: video.progress,
    prompt: video.prompt.length > 160 ? `${video.prompt.slice(0, 159)}…` : video.prompt,
    model: video.model,
    duration: video.duration,
    createdAt: video.createdAt,
    completedAt: video.completedAt,
    errorCode: video.errorCode,
    callbackUrl: video.callbackUrl,
    retryOf: video.retryOf,
  };
}

export function imageSummary(job: ImageJob): ImageSummary {
  const { command } = job;
  return {
    id: job.id,
    accountId: job.accountId,
    status: job.status,
    type: command.type,
    template: command.template,
    description: command.description.length > 160 ? `${command.description.slice(0, 159)}…` : command.description,
    images: job.images.length,
    count: command.count,
    createdAt: job.createdAt,
    completedAt: job.completedAt,
    errorCode: job.errorCode,
  };
}
