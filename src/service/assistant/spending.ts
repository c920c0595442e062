import { createHash } from 'node:crypto';
import { canonicalJson } from '../core/idempotency.js';
import type { KeyLease } from '../runner/chain.js';
import { ASSISTANT_TEXT } from '../contract/assistant.js';
import { LIMITS } from '../contract/limits.js';
import type { Account } from '../core/accounts.js';
import type { Table, TableIndex } from '../core/store.js';
import type { SpendingParts } from './parts.js';
import { VideoLifecycle } from '../resources/videos/lifecycle.js';
import { refuse, type ToolAnswer } from './answers.js';

// The spending limits (spec 5.7 and 8) are LIMITS.assistant's; an `idempotency_key` is remembered as /v1's
// Idempotency-Key (LIMITS.idempotencyWindowMs).
const { concurrentClips, repeatWindowMs, dailyWindowMs } = LIMITS.assistant;

/** Who is spending: one assistant connection (an API key used on `/mcp`, or an OAuth approval) of one account. */
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
export type Made = { id: number; value: Record<string, unknown> };

/** One charge of an assistant, kept in the data file: what it made and when. */
export interface SpendRow {
  id: number;
  assistant: string;
  kind: 'clip' | 'image';
  targetId: number;
  at: number;
  /** Credits the clip or job holds, as last seen: what counts once it is deleted (a deletion refunds nothing). */
  credits: number;
}

/**
 * The first answer of a spending call as an older data file keeps it (2 minutes, or 24 hours for an
 * `idempotency_key`): read only to move it, when the file is opened, into the service's Idempotency-Key
 * records, which keep these answers.
 */
export interface CallRow {
  /** sha256 of the assistant, the tool and its arguments (or its `idempotency_key`). */
  id: string;
  at: number;
  window: number;
  value: Record<string, unknown>;
}

export type SpendingTables = { assistant_spend: SpendRow; assistant_call: CallRow };

/** How long a charge is kept: past the rolling day, with room for a clip still running. */
const KEEP_SPENDS_MS = 2 * dailyWindowMs;

/**
 * The spending rules of the assistant endpoint, enforced before anything is charged: `max_credits`, the
 * daily limit per assistant (rolling 24 h on the service's clock, counting the credits its clips and
 * images still hold, so a refund gives them back), three running clips, and no double charge for a
 * repeat. One assistant's spending calls run one at a time, so two calls cannot both pass the checks.
 * The ledger and the first answers live in the service's data file, so a restart forgets neither.
 */
export class AssistantSpending {
  readonly #parts: SpendingParts;
  readonly #limit: (assistant: string, account: Account) => number;
  readonly #spends: Table<SpendRow>;
  readonly #keys: SpendingParts['idempotency'];
  // Indexes of the assistant_spend table, which keeps them in step (a rollback included).
  /** Each assistant's charges, oldest first. */
  readonly #ledger: TableIndex<SpendRow, string>;
  /** Charges by clip id: a clip's refund updates its charge at once, so a later deletion keeps the right figure. */
  readonly #byClip: TableIndex<SpendRow, number>;
  /** Calls whose first answer is not settled yet: a repeat waits for it. */
  readonly #pending = new Map<string, Promise<ToolAnswer>>();
  readonly #queues = new Map<string, Promise<unknown>>();

  /** `limit` gives an assistant's daily limit in credits (the one its account holder set, or the default). */
  constructor(parts: SpendingParts, limit: (assistant: string, account: Account) => number) {
    this.#parts = parts;
    this.#limit = limit;
    this.#spends = parts.store.table('assistant_spend') as unknown as Table<SpendRow>;
    this.#keys = parts.idempotency;
    // First answers an older data file kept in assistant_call move into the one engine, with their windows.
    const calls = parts.store.table('assistant_call') as unknown as Table<CallRow>;
    const records = parts.store.table('idempotency');
    for (const call of [...calls.values()]) {
      records.put({ id: `${CALL_SCOPE}:${call.id}`, fingerprint: CALL_SCOPE, createdAt: call.at, windowMs: call.window, response: { status: 200, body: call.value } });
      calls.remove(call.id);
    }
    this.#ledger = this.#spends.index('assistant', (spend) => spend.assistant);
    this.#byClip = this.#spends.index('clip', (spend) => (spend.kind === 'clip' ? spend.targetId : undefined));
    parts.state.videos.on('change', (video: { id: number }) => {
      const spend = this.#byClip.first(video.id);
      if (spend) this.#credits(spend);
    });
  }

  /** The assistant's daily limit in credits. */
  dailyLimit(assistant: string, account: Account): number {
    return this.#limit(assistant, account);
  }

  /** Credits the assistant's clips and images of the last 24 hours hold. */
  usedToday(assistant: string): number {
    const since = this.#parts.clock.now() - dailyWindowMs;
    return this.#ledger.get(assistant).filter((spend) => spend.at > since).reduce((sum, spend) => sum + this.#credits(spend), 0);
  }

  /** Clips of the assistant still pending or rendering. */
  runningClips(assistant: string): number {
    return this.#ledger.get(assistant).filter((spend) => {
      if (spend.kind !== 'clip') return false;
      const status = this.#parts.state.videos.get(spend.targetId)?.status;
      return status === 'pending' || status === 'generating';
    }).length;
  }

  /**
   * Runs one spending call under the rules: the first answer of a repeat, else the checks, else `make`.
   * Refusals are not remembered: the same call may succeed later (after a top-up, or a day).
   */
  async spend(who: Spender, request: SpendRequest, make: () => Promise<Made>): Promise<ToolAnswer> {
    this.#forgetOld(who.assistant, this.#parts.clock.now());
    const keys = [{ id: callId(who.assistant, 'args', request.tool, canonicalJson(request.args)), windowMs: repeatWindowMs }];
    // An idempotency_key belongs to one tool: the same key on another tool is another call.
    if (request.idempotencyKey !== undefined) keys.unshift({ id: callId(who.assistant, 'key', request.tool, request.idempotencyKey), windowMs: LIMITS.idempotencyWindowMs });
    // A call still in flight first: its answer is written before its commit, and the commit may yet fail.
    for (const { id } of keys) {
      const pending = this.#pending.get(id);
      if (pending) return pending.then((answer) => (answer.ok ? { ok: true, value: { ...answer.value, replayed: true } } : answer));
    }
    // The repeat rules are keys of the service's one Idempotency-Key engine, each with its
    // window; the fingerprint is the scope, so the same idempotency_key with reworded arguments is a repeat.
    const leases: KeyLease[] = [];
    for (const { id, windowMs } of keys) {
      const start = this.#keys.beginHere(CALL_SCOPE, id, CALL_SCOPE, { windowMs });
      if (start.kind === 'fresh') {
        leases.push(start);
        continue;
      }
      for (const lease of leases) lease.finish(null);
      // Not in flight here (that was answered above), so a stored first answer.
      if (start.kind === 'replay') return { ok: true, value: { ...(start.response.body as Record<string, unknown>), replayed: true } };
      throw new Error(`An assistant's call ${start.kind} without a call in flight.`);
    }
    const answer = this.#serially(who.assistant, () => this.#checkAndMake(who, request, leases, make));
    for (const { id } of keys) this.#pending.set(id, answer);
    try {
      return await answer;
    } finally {
      for (const { id } of keys) if (this.#pending.get(id) === answer) this.#pending.delete(id);
    }
  }

  /** The checks, then `make` with its charge in one unit; the keys' leases end with it (refusals are not remembered). */
  async #checkAndMake(who: Spender, request: SpendRequest, leases: readonly KeyLease[], make: () => Promise<Made>): Promise<ToolAnswer> {
    const { price, maxCredits } = request;
    try {
      if (price > maxCredits) {
        // One code per rule, the API's (spec 4.7 and 7: 422 cost_exceeds_max, with the cost).
        return refuse('cost_exceeds_max', `This costs ${price} credits, more than max_credits (${maxCredits}). Nothing was charged; ask the person before raising max_credits.`, { cost: price, max_credits: maxCredits });
      }
      if (request.kind === 'clip' && this.runningClips(who.assistant) >= concurrentClips) {
        return refuse('too_many_running_clips', `At most ${concurrentClips} clips from one assistant run at once. Nothing was charged; wait for one to end (get_clip) and try again.`, { running: concurrentClips });
      }
      const limit = this.#limit(who.assistant, who.account);
      const used = this.usedToday(who.assistant);
      if (used + price > limit) {
        return refuse('daily_limit_reached', `This costs ${price} credits, and this assistant has used ${used} of its ${limit} credits in the last ${ASSISTANT_TEXT.dailyWindow}. Nothing was charged; the person can raise the limit in the account settings, or try later.`, { price, used_today: used, daily_limit: limit });
      }
      // The charge and the first answer go into the ledger in the task's own unit: saved all together, or
      // taken back all together, indexes included (the table's). A failure goes on to the tool chain's one
      // mapping (a failed write: 503 upstream_busy).
      const made = await this.#parts.store.unit(async () => {
        const created = await make();
        const at = this.#parts.clock.now();
        this.#spends.put({ id: this.#parts.store.nextId('assistant_spend'), assistant: who.assistant, kind: request.kind, targetId: created.id, at, credits: price });
        for (const lease of leases) lease.finish({ status: 200, body: created.value });
        return created;
      });
      return { ok: true, value: made.value };
    } finally {
      // Refusals are not remembered: the same call may succeed later. (A kept answer was finished already.)
      for (const lease of leases) lease.finish(null);
    }
  }

  /**
   * What a charge holds now: the clip's or job's credits after refunds. Once the clip or job is deleted
   * (which refunds nothing) the last figure seen stands.
   */
  #credits(spend: SpendRow): number {
    let held: number | null = null;
    if (spend.kind === 'clip') {
      const video = this.#parts.state.videos.get(spend.targetId);
      if (video) held = VideoLifecycle.creditsUsed(video);
    } else {
      const job = this.#parts.store.table('image_job').get(spend.targetId);
      if (job) held = job.creditsCharged ?? job.creditsReserved - job.creditsRefunded;
    }
    if (held === null) return spend.credits;
    if (held !== spend.credits) {
      spend.credits = held;
      this.#spends.put(spend);
    }
    return held;
  }

  #serially<T>(assistant: string, run: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(assistant) ?? Promise.resolve();
    const next = before.then(run, run);
    const settled = next.catch(() => undefined);
    this.#queues.set(assistant, settled);
    void settled.then(() => this.#queues.get(assistant) === settled && this.#queues.delete(assistant));
    return next;
  }

  /**
   * Drops the assistant's charges past two days (they count no more); first answers go with the Idempotency-Key
   * records' sweep. Only its own, on its account's own time (another account's clock may run days ahead,
   * and would forget this one's day), so a call's cost does not grow with other assistants' history.
   */
  #forgetOld(assistant: string, now: number): void {
    for (const spend of this.#ledger.get(assistant)) if (now - spend.at >= KEEP_SPENDS_MS) this.#spends.remove(spend.id);
  }
}

/** The scope of the assistant's repeats among the Idempotency-Key records (a /v1 key's scope is an account id). */
const CALL_SCOPE = 'assistant';

const callId = (...parts: string[]) => createHash('sha256').update(parts.join('\0')).digest('base64url');
