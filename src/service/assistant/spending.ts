import type { Account } from '../accounts.js';
import type { Service } from '../service.js';
import { VideoLifecycle } from '../videos/lifecycle.js';

/** The assistant endpoint's spending limits (spec 5.7 and 8). */
export const ASSISTANT_LIMITS = Object.freeze({
  /** Credits per rolling 24 hours per assistant, once the account has topped up… */
  dailyCredits: 30,
  /** …and before its first top-up. */
  dailyCreditsBeforeTopUp: 10,
  /** Clips of one assistant pending or rendering at once. */
  concurrentClips: 3,
  /** A call with the same arguments within this window returns the first result. */
  repeatWindowMs: 2 * 60_000,
  /** How long an `idempotency_key` is remembered (as /v1's Idempotency-Key). */
  idempotencyWindowMs: 24 * 3_600_000,
  dayMs: 24 * 3_600_000,
});

/** What a tool answers: a value, or a refusal the assistant can read (nothing charged). */
export type ToolAnswer = { ok: true; value: Record<string, unknown> } | { ok: false; code: string; message: string; details?: Record<string, unknown> };

/** A refusal. */
export const refuse = (code: string, message: string, details?: Record<string, unknown>): ToolAnswer => ({ ok: false, code, message, ...(details ? { details } : {}) });

/** Who is spending: one assistant (for the bearer key, the API key) of one account. */
export interface Spender {
  assistant: string;
  account: Account;
}

/** A spending call: what it costs, its cap, and what it makes. */
export interface SpendRequest {
  tool: string;
  /** The tool's arguments: a repeat of the same ones within 2 minutes is not charged again. */
  args: Record<string, unknown>;
  idempotencyKey: string | undefined;
  kind: 'clip' | 'image';
  price: number;
  maxCredits: number;
}

/** What `make` created: the answer, and the id of the clip or image job the credits went to. */
export type Made = { ok: true; id: number; value: Record<string, unknown> } | Extract<ToolAnswer, { ok: false }>;

interface Spend {
  kind: 'clip' | 'image';
  id: number;
}

interface Remembered {
  at: number;
  window: number;
  answer: Promise<ToolAnswer>;
}

/**
 * The spending rules of the assistant endpoint, enforced before anything is charged: `max_credits`, the
 * daily limit per assistant (rolling 24 h on the service's clock, counting the credits its clips and
 * images still hold, so a refund gives them back), three running clips, and no double charge for a
 * repeat. One assistant's spending calls run one at a time, so two calls cannot both pass the checks.
 * Kept in memory: a restart of the service forgets the ledger (the clips themselves stay).
 */
export class AssistantSpending {
  readonly #service: Service;
  readonly #ledger = new Map<string, Array<Spend & { at: number }>>();
  readonly #remembered = new Map<string, Remembered>();
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(service: Service) {
    this.#service = service;
  }

  /** The assistant's daily limit in credits: 30, or 10 until the account has topped up once. */
  dailyLimit(account: Account): number {
    return account.toppedUp ? ASSISTANT_LIMITS.dailyCredits : ASSISTANT_LIMITS.dailyCreditsBeforeTopUp;
  }

  /** Credits the assistant's clips and images of the last 24 hours hold. */
  usedToday(assistant: string): number {
    const since = this.#service.clock.now() - ASSISTANT_LIMITS.dayMs;
    return (this.#ledger.get(assistant) ?? []).filter((spend) => spend.at > since).reduce((sum, spend) => sum + this.#credits(spend), 0);
  }

  /** Clips of the assistant still pending or rendering. */
  runningClips(assistant: string): number {
    return (this.#ledger.get(assistant) ?? []).filter((spend) => {
      if (spend.kind !== 'clip') return false;
      const status = this.#service.videos.get(spend.id)?.status;
      return status === 'pending' || status === 'generating';
    }).length;
  }

  /** Whether the clip or image job was made by this assistant. */
  made(assistant: string, kind: 'clip' | 'image', id: number): boolean {
    return (this.#ledger.get(assistant) ?? []).some((spend) => spend.kind === kind && spend.id === id);
  }

  /**
   * Runs one spending call under the rules: the first answer of a repeat, else the checks, else `make`.
   * Refusals are not remembered: the same call may succeed later (after a top-up, or a day).
   */
  spend(who: Spender, request: SpendRequest, make: () => Promise<Made>): Promise<ToolAnswer> {
    const now = this.#service.clock.now();
    this.#forgetOld(now);
    const keys = [`${who.assistant}\0args\0${request.tool}\0${stableJson(request.args)}`];
    if (request.idempotencyKey !== undefined) keys.unshift(`${who.assistant}\0key\0${request.idempotencyKey}`);
    for (const key of keys) {
      const first = this.#remembered.get(key);
      if (first) return first.answer.then((answer) => (answer.ok ? { ok: true, value: { ...answer.value, replayed: true } } : answer));
    }
    const answer = this.#serially(who.assistant, () => this.#checkAndMake(who, request, make));
    const remember = (key: string, window: number) => this.#remembered.set(key, { at: now, window, answer });
    keys.forEach((key) => remember(key, key.includes('\0key\0') ? ASSISTANT_LIMITS.idempotencyWindowMs : ASSISTANT_LIMITS.repeatWindowMs));
    void answer.then(
      (settled) => {
        if (!settled.ok) keys.forEach((key) => this.#remembered.get(key)?.answer === answer && this.#remembered.delete(key));
      },
      () => keys.forEach((key) => this.#remembered.delete(key)),
    );
    return answer;
  }

  async #checkAndMake(who: Spender, request: SpendRequest, make: () => Promise<Made>): Promise<ToolAnswer> {
    const { price, maxCredits } = request;
    if (price > maxCredits) {
      return refuse('max_credits_exceeded', `This costs ${price} credits, more than max_credits (${maxCredits}). Nothing was charged; ask the person before raising max_credits.`, { price, max_credits: maxCredits });
    }
    if (request.kind === 'clip' && this.runningClips(who.assistant) >= ASSISTANT_LIMITS.concurrentClips) {
      return refuse('too_many_running_clips', `At most ${ASSISTANT_LIMITS.concurrentClips} clips from one assistant run at once. Nothing was charged; wait for one to end (get_clip) and try again.`, { running: ASSISTANT_LIMITS.concurrentClips });
    }
    const limit = this.dailyLimit(who.account);
    const used = this.usedToday(who.assistant);
    if (used + price > limit) {
      return refuse('daily_limit_reached', `This costs ${price} credits, and this assistant has used ${used} of its ${limit} credits in the last 24 hours. Nothing was charged; the person can raise the limit in the account settings, or try later.`, { price, used_today: used, daily_limit: limit });
    }
    const made = await make();
    if (!made.ok) return made;
    const spends = this.#ledger.get(who.assistant) ?? [];
    spends.push({ kind: request.kind, id: made.id, at: this.#service.clock.now() });
    this.#ledger.set(who.assistant, spends);
    return { ok: true, value: made.value };
  }

  #credits(spend: Spend): number {
    if (spend.kind === 'clip') {
      const video = this.#service.videos.get(spend.id);
      return video ? VideoLifecycle.creditsUsed(video) : 0;
    }
    const job = [...this.#service.store.table('image_job').values()].find((candidate) => candidate.id === spend.id);
    if (!job) return 0;
    return job.creditsCharged ?? job.creditsReserved - job.creditsRefunded;
  }

  #serially<T>(assistant: string, run: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(assistant) ?? Promise.resolve();
    const next = before.then(run, run);
    const settled = next.catch(() => undefined);
    this.#queues.set(assistant, settled);
    void settled.then(() => this.#queues.get(assistant) === settled && this.#queues.delete(assistant));
    return next;
  }

  #forgetOld(now: number): void {
    for (const [key, entry] of this.#remembered) if (now - entry.at >= entry.window) this.#remembered.delete(key);
  }
}

/** JSON with object keys sorted, so the same arguments in another order are the same call. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
