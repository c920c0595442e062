import { EventEmitter } from 'node:events';
import { ERROR_SENTENCES, type VideoErrorCode } from '../../../protocol/events.js';
import type { Account, Accounts } from '../../core/accounts.js';
import type { Credits } from '../../core/credits.js';
import { onTimeOf, type LaneClock } from '../../core/clock.js';
import type { ServiceStore, Table, TableIndex } from '../../core/store.js';
import type { Resolution, VideoModel } from '../../contract/pricing.js';
import type { SubjectConsent } from '../../contract/common.js';
import type { AssetSource, Ratio, VideoStatus } from '../../contract/videos.js';
import type { DeleteAction } from '../../contract/video-responses.js';
import { LIMITS } from '../../contract/limits.js';
import type { Speed } from '../../core/simulate.js';

/** Spec 2.1 and 3.1. */
export type { VideoStatus };


/** A clip task as the service keeps it. The response shapes of spec 2.1-2.5 are made from it. */
export interface Video {
  id: number;
  accountId: number;
  /** The key that created it: its webhook secret signs the clip's webhooks (spec 5.5). */
  keyId: string;
  status: VideoStatus;
  prompt: string;
  model: VideoModel;
  duration: number;
  ratio: Ratio;
  resolution: Resolution;
  imageUrls: string[];
  assetIdsUsed: number[] | null;
  assetSource: AssetSource;
  subjectConsent: SubjectConsent | null;
  callbackUrl: string | null;
  /** Credits charged at creation; `creditsUsed` is 0 once refunded. */
  charged: number;
  refunded: boolean;
  progress: string | null;
  errorCode: VideoErrorCode | null;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  /** The task this one retries (spec 2.3), and the retry made of this one. */
  retryOf: number | null;
  retriedBy: number | null;
  batchId: string | null;
  /** When it starts rendering and when it ends, and how: fixed at creation, so a restart resumes the same plan. */
  plan: { startAt: number; endAt: number; outcome: 'done' | VideoErrorCode };
  /** A `simulate:<code>:sticky` marker: a retry of this task fails the same way. */
  sticky: boolean;
  /** Its webhook is in the emitter's outbox (spec 6); a restart sends the ones that are not. */
  webhookQueued?: boolean;
}

export interface VideoTables {
  video: Video;
}

/** Pending and rendering times in milliseconds, per speed. */
const TIMINGS: Record<Speed, { pending: [number, number]; rendering: [number, number]; timeout: number }> = {
  fast: { pending: [500, 1_500], rendering: [2_000, 4_000], timeout: 6_000 },
  // Spec 1: "a typical clip takes 1-2 minutes"; upstream_timeout is "a 10-minute polling time-out" (2.9).
  realistic: { pending: [5_000, 15_000], rendering: [55_000, 105_000], timeout: LIMITS.generationTimeoutMs },
};

/** Progress steps of a rendering clip (realistic speed): `progress` moves in tenths. */
const PROGRESS_STEPS = 10;

export interface LifecycleEvents {
  /** Every change of a clip's status or progress: waiters (the assistant's get_clip) listen here. */
  change: [video: Video];
  /** A clip reached done or error: the webhook is sent from here. */
  terminal: [video: Video];
}

export interface LifecycleOptions {
  store: ServiceStore<VideoTables>;
  accounts: Accounts;
  credits: Credits;
  clock: LaneClock;
  speed: Speed;
  /** @default Math.random */
  random?: () => number;
  /** Reports a failed write of a transition (the change stays in memory and is retried with the next commit). */
  onError?: (error: Error) => void;
}

export type NewVideo = Omit<Video, 'id' | 'status' | 'progress' | 'errorCode' | 'startedAt' | 'completedAt' | 'retriedBy' | 'refunded' | 'plan' | 'createdAt' | 'webhookQueued'> & {
  /** `simulate:<error_code>`: how the clip ends. */
  outcome: 'done' | VideoErrorCode;
};

/**
 * The state machine of spec 3.1, the one place a clip changes state: created pending (charged), rendering
 * at its planned start, done or error (refunded) at its planned end, cancelled from pending (refunded).
 * Every transition is read from the simulated clock and journalled; `resume()` re-arms the plans of
 * clips that were in flight when the service stopped.
 */
export class VideoLifecycle extends EventEmitter<LifecycleEvents> {
  readonly #videos: Table<Video>;
  readonly #options: LifecycleOptions;
  readonly #random: () => number;
  readonly #timers = new Map<number, unknown>();
  /**
   * Each account's clips, so its list and its account view read no other account's clips; the table keeps it
   * in step.
   */
  readonly #byAccount: TableIndex<Video, number>;

  constructor(options: LifecycleOptions) {
    super();
    this.#options = options;
    this.#videos = options.store.table('video');
    this.#random = options.random ?? Math.random;
    this.#byAccount = this.#videos.index('accountId', (video) => video.accountId);
    // A clip removed beside it (its account deleted, its creation taken back) takes its timer with it.
    this.#videos.watch('timers', (id, row) => row === null && this.#disarm(id));
  }

  get(id: number): Video | undefined {
    return this.#videos.get(id);
  }

  /** The account's clips in filing order, oldest first but for a clip a rollback put back (a lookup: its cost is the account's clips, not every account's). */
  of(accountId: number): Video[] {
    return this.#byAccount.get(accountId);
  }

  /** Creates a pending clip; the caller has charged `charged` credits in the same turn. */
  create(input: NewVideo): Video {
    const now = this.#options.clock.now();
    const { pending, rendering, timeout } = TIMINGS[this.#options.speed];
    const startAt = now + this.#between(pending);
    const endAt = input.outcome === 'upstream_timeout' ? startAt + timeout : startAt + this.#between(rendering);
    // One literal, every member named: `{ outcome, ...fields }` then `{ ...fields, id, … }` costs V8 ~15 µs
    // a clip (a rest copy, then ten members added one by one). The members keep the order those spreads give.
    const video = this.#videos.put({
      accountId: input.accountId,
      keyId: input.keyId,
      prompt: input.prompt,
      model: input.model,
      duration: input.duration,
      ratio: input.ratio,
      resolution: input.resolution,
      imageUrls: input.imageUrls,
      assetIdsUsed: input.assetIdsUsed,
      assetSource: input.assetSource,
      subjectConsent: input.subjectConsent,
      callbackUrl: input.callbackUrl,
      charged: input.charged,
      retryOf: input.retryOf,
      batchId: input.batchId,
      sticky: input.sticky,
      id: this.#options.store.nextId('video'),
      status: 'pending',
      progress: null,
      errorCode: null,
      refunded: false,
      createdAt: now,
      startedAt: null,
      completedAt: null,
      retriedBy: null,
      plan: { startAt, endAt, outcome: input.outcome },
    });
    this.#arm(video);
    return video;
  }

  /**
   * A clip made in any state by a seed fixture, charging nothing: pending and generating ones
   * follow the plan from now (their webhook goes when they end); done, error and cancelled ones ended now,
   * with no webhook. A done clip's signed links work; an error one with a retryable code can be retried.
   */
  seed(input: NewVideo, status: VideoStatus, errorCode: VideoErrorCode | null): Video {
    const now = this.#options.clock.now();
    const { rendering } = TIMINGS[this.#options.speed];
    const video = this.create(input);
    if (status === 'pending') return video;
    this.#disarm(video.id);
    if (status === 'generating') {
      video.status = 'generating';
      video.startedAt = now;
      video.progress = '0%';
      video.plan = { startAt: now, endAt: now + this.#between(rendering), outcome: video.plan.outcome };
      this.#videos.put(video);
      this.#arm(video);
      return video;
    }
    video.status = status;
    video.startedAt = status === 'cancelled' ? null : now;
    video.completedAt = now;
    video.progress = status === 'done' ? '100%' : null;
    video.errorCode = status === 'done' ? null : errorCode;
    video.plan = { startAt: now, endAt: now, outcome: status === 'done' ? 'done' : (errorCode ?? 'upstream_error') };
    return this.#videos.put(video);
  }

  /**
   * DELETE of a clip (spec 4.5): a pending one is cancelled and refunded, a rendering one refused, a
   * finished one removed. Returns what happened and the credits refunded.
   */
  remove(video: Video): { action: DeleteAction; refunded: number } | 'already_rendering' {
    if (video.status === 'generating') return 'already_rendering';
    if (video.status === 'pending') {
      this.#disarm(video.id);
      video.status = 'cancelled';
      // Spec 2.9 lists `cancelled` among the error codes: the clip says why it ended, with its sentence.
      video.errorCode = 'cancelled';
      video.completedAt = this.#options.clock.now();
      const refunded = this.#refund(video);
      this.#save(video);
      return { action: 'cancelled', refunded };
    }
    this.#disarm(video.id);
    this.#videos.remove(video.id);
    return { action: 'deleted', refunded: 0 };
  }


  /** Marks `video` as retried by `retry` (spec 3.1: one retry per task). */
  markRetried(video: Video, retry: Video): void {
    video.retriedBy = retry.id;
    this.#videos.put(video);
  }

  /** Re-arms every clip that was pending or rendering when the store was written: after a restart. */
  resume(): void {
    for (const video of this.#videos.values()) if (video.status === 'pending' || video.status === 'generating') this.#arm(video);
  }

  /**
   * Brings the timers back in line with the rows after a request's changes were taken back: a cancel undone
   * rearms its clip, a creation undone leaves none armed. The clip index needs nothing: the table keeps it
   * in step.
   */
  resync(): void {
    for (const id of [...this.#timers.keys()]) {
      const status = this.#videos.get(id)?.status;
      if (status !== 'pending' && status !== 'generating') this.#disarm(id);
    }
    this.resume();
  }

  /** Disarms every timer (the service is closing). */
  stop(): void {
    for (const id of [...this.#timers.keys()]) this.#disarm(id);
  }

  /** Credits the clip counts as used: 0 after a refund (spec 2.1). */
  static creditsUsed(video: Video): number {
    return video.refunded ? 0 : video.charged;
  }

  /** Arms the next step of the clip's plan, on its account's time. */
  #arm(video: Video): void {
    onTimeOf(this.#options.clock, video.accountId, () => this.#armNow(video));
  }

  #armNow(video: Video): void {
    this.#disarm(video.id);
    const now = this.#options.clock.now();
    const { startAt, endAt } = video.plan;
    if (video.status === 'pending') {
      this.#at(video, startAt - now, () => {
        video.status = 'generating';
        video.startedAt = startAt;
        video.progress = '0%';
        this.#save(video);
        this.#arm(video);
      });
      return;
    }
    if (video.status !== 'generating') return;
    const step = (endAt - startAt) / PROGRESS_STEPS;
    // Progress moves at realistic speed only: at fast speed each step would be a write for nothing.
    if (this.#options.speed === 'realistic' && video.plan.outcome !== 'upstream_timeout') {
      this.#armProgress(video, Math.floor((now - startAt) / step) + 1, step);
      return;
    }
    this.#at(video, endAt - now, () => this.#finish(video));
  }

  /**
   * Arms progress step `done` (of PROGRESS_STEPS), then the next from the step's own callback: the index is
   * carried, never worked out again from the time, which a fractional step can put a hair short of it.
   */
  #armProgress(video: Video, done: number, step: number): void {
    const { startAt, endAt } = video.plan;
    const now = this.#options.clock.now();
    if (done >= PROGRESS_STEPS) {
      this.#at(video, endAt - now, () => this.#finish(video));
      return;
    }
    this.#at(video, startAt + Math.round(done * step) - now, () => {
      video.progress = `${Math.round((done * 100) / PROGRESS_STEPS)}%`;
      this.#save(video);
      this.#armProgress(video, done + 1, step);
    });
  }

  #finish(video: Video): void {
    this.#timers.delete(video.id);
    const { outcome, endAt } = video.plan;
    video.completedAt = endAt;
    if (outcome === 'done') {
      video.status = 'done';
      video.progress = '100%';
    } else {
      video.status = 'error';
      video.errorCode = outcome;
      video.progress = null;
      this.#refund(video);
    }
    this.#save(video);
    this.emit('terminal', video);
  }

  #refund(video: Video): number {
    if (video.refunded || video.charged === 0) return 0;
    video.refunded = true;
    const account: Account | undefined = this.#options.accounts.get(video.accountId);
    if (account) this.#options.credits.refund(account, video.charged);
    return video.charged;
  }

  #save(video: Video): void {
    this.#videos.put(video);
    this.emit('change', video);
    this.#options.store.commit().catch((error: Error) => this.#options.onError?.(error));
  }

  #at(video: Video, ms: number, run: () => void): void {
    this.#timers.set(video.id, this.#options.clock.setTimeout(run, Math.max(0, ms)));
  }

  #disarm(id: number): void {
    const timer = this.#timers.get(id);
    if (timer !== undefined) this.#options.clock.clearTimeout(timer);
    this.#timers.delete(id);
  }

  #between([low, high]: [number, number]): number {
    return Math.round(low + (high - low) * this.#random());
  }
}

/** The `error` sentence of a failed clip (spec 2.1: build on error_code; the text may change). */
export function errorSentence(code: VideoErrorCode | null): string | null {
  return code === null ? null : ERROR_SENTENCES[code];
}
