import { classifyReply, type ReplyClass } from '../../protocol/schedule.js';
import { CHAOS_MODES, type ChaosMode } from './contract/chaos-modes.js';

// Webhook chaos: deliveries made the ways a real network and a real sender make them, so a
// receiver's defences are exercised one by one — the dedupe by X-Service-Delivery (duplicate, concurrent,
// cut), the replay window on the signed delivered_at (late), secrets kept through a rotation (previous
// secret) and order-independence (out of order). Pure planning: the wiring sends what the plan says.
// What a correct receiver does in each mode: docs/service.md, "Webhook chaos".

export { CHAOS_MODES, type ChaosMode };

/** The replay window of cliphook's receiver (`tolerance`, 300 s) and of spec-following receivers. */
export const RECEIVER_WINDOW_MS = 5 * 60_000;
/**
 * How far a late copy's `delivered_at` is backdated: twice the 5-minute window, so a receiver whose
 * clock is a few minutes off the service's still sees it outside the window.
 */
export const LATE_BACKDATE_MS = 2 * RECEIVER_WINDOW_MS;

const MARKER = /(?:^|[^\w:])simulate:(webhook_[a-z_]+)(?![\w:])/g;

/**
 * The chaos modes a prompt asks for (`simulate:webhook_duplicate`, …), in the order of `CHAOS_MODES`;
 * a `simulate:webhook_…` that names no mode is not a marker and is ignored.
 * @example chaosModesOf('a fox simulate:webhook_late simulate:webhook_duplicate') // ['webhook_duplicate', 'webhook_late']
 */
export function chaosModesOf(prompt: string | null | undefined): ChaosMode[] {
  if (!prompt) return [];
  const found = new Set<string>();
  for (const match of prompt.matchAll(MARKER)) found.add(match[1]!);
  return CHAOS_MODES.filter((mode) => found.has(mode));
}

/** The chaos modes among `names`, in their order: an account's, as core keeps them (plain strings). */
export function knownModes(names: readonly string[]): ChaosMode[] {
  return names.filter((name): name is ChaosMode => (CHAOS_MODES as readonly string[]).includes(name));
}

/**
 * The modes of a clip's webhook (its prompt's and its account's together), or an account's as sent: each
 * once, in the order given, as `svc.webhookChaos` answers the modes in the order sent.
 * @example combineModes(['webhook_late', 'webhook_duplicate', 'webhook_late']) // ['webhook_late', 'webhook_duplicate']
 */
export function combineModes(...lists: ReadonlyArray<readonly ChaosMode[]>): ChaosMode[] {
  return [...new Set(lists.flat())];
}

/** One request of an attempt. */
export interface PlannedSend {
  /**
   * When it starts: `first` is the attempt itself; `with_first` starts at the same instant, without
   * waiting for the first's answer; `after_previous` once the send before it has its answer. All are at
   * the attempt's time on the simulated clock (no time passes between them).
   */
  timing: 'first' | 'with_first' | 'after_previous';
  /** Signed with the key's current webhook secret, or the one it had before its last rotation. */
  secret: 'current' | 'previous';
  /** `delivered_at` is the send's time minus this; 0 for the true time. */
  backdateMs: number;
  /** `same`: the delivery's X-Service-Delivery; `fresh`: a new id (a copy whose header was changed, which it is not signed against). */
  deliveryId: 'same' | 'fresh';
  /**
   * What the sender does with the answer: `decides` it counts for the attempt (see `attemptOutcome`);
   * `discarded` the attempt is taken as failed without an answer, as a cut connection is, and the
   * schedule sends it again; `ignored` an extra copy whose answer changes nothing.
   */
  answer: 'decides' | 'discarded' | 'ignored';
  /** The mode that made or shaped this send; null for an ordinary send. */
  mode: ChaosMode | null;
}

/** The sends of one attempt, and the modes it could not apply. */
export interface AttemptPlan {
  sends: PlannedSend[];
  /** Modes asked for that this attempt cannot apply, and why. */
  skipped: Array<{ mode: ChaosMode; reason: string }>;
}

/** What `planAttempt` needs to know of a delivery. */
export interface AttemptPlanInput {
  modes: readonly ChaosMode[];
  /** 1 for the first attempt of the delivery, 2 for the first retry… (spec 6.4). */
  attempt: number;
  /** Whether the key's secret has been rotated, so a previous secret exists. */
  hasPreviousSecret: boolean;
}

/**
 * The sends of one delivery attempt. The duplicate, concurrent, cut and late modes act on the first
 * attempt only (a retry is the ordinary schedule, spec 6.4); the previous secret signs every attempt;
 * out of order is about a batch's deliveries, not an attempt (`batchRelease`).
 * @example planAttempt({ modes: ['webhook_cut'], attempt: 1, hasPreviousSecret: false }).sends // [{ timing: 'first', answer: 'discarded', mode: 'webhook_cut', … }]
 */
export function planAttempt({ modes, attempt, hasPreviousSecret }: AttemptPlanInput): AttemptPlan {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new TypeError(`Expected \`attempt\` to be a whole number >= 1, got ${attempt}.`);
  const asked = new Set(modes);
  const skipped: AttemptPlan['skipped'] = [];
  let secret: PlannedSend['secret'] = 'current';
  if (asked.has('webhook_previous_secret')) {
    if (hasPreviousSecret) secret = 'previous';
    else skipped.push({ mode: 'webhook_previous_secret', reason: 'The key’s webhook secret was never rotated: there is no previous secret, so the current one signs.' });
  }
  const shaped = secret === 'previous' ? 'webhook_previous_secret' : null;
  const first = attempt === 1;
  const cut = first && asked.has('webhook_cut');
  const base: PlannedSend = { timing: 'first', secret, backdateMs: 0, deliveryId: 'same', answer: cut ? 'discarded' : 'decides', mode: cut ? 'webhook_cut' : shaped };
  const sends: PlannedSend[] = [base];
  if (first && asked.has('webhook_concurrent')) sends.push({ ...base, timing: 'with_first', mode: 'webhook_concurrent' });
  if (first && asked.has('webhook_duplicate')) sends.push({ ...base, timing: 'after_previous', answer: 'ignored', mode: 'webhook_duplicate' });
  if (first && asked.has('webhook_late')) sends.push({ ...base, timing: 'after_previous', backdateMs: LATE_BACKDATE_MS, deliveryId: 'fresh', answer: 'ignored', mode: 'webhook_late' });
  return { sends, skipped };
}

/**
 * What the sender makes of an attempt's answers, `replies[i]` being the answer to `plan.sends[i]` (an
 * HTTP status, or an Error when none came): delivered when a deciding send got a 2xx; else permanent when
 * one got a 4xx (spec 6.4: not retried); else retried on the schedule — as when every send was discarded.
 * @example attemptOutcome(plan, [200, 503]) // 'delivered' (a concurrent copy found the first in progress)
 */
export function attemptOutcome(plan: AttemptPlan, replies: ReadonlyArray<number | Error>): ReplyClass {
  if (replies.length !== plan.sends.length) throw new TypeError(`Expected one reply per send (${plan.sends.length}), got ${replies.length}.`);
  const decided = plan.sends.flatMap((send, i) => (send.answer === 'decides' ? [classifyReply(replies[i])] : []));
  if (decided.includes('delivered')) return 'delivered';
  return decided.includes('permanent') ? 'permanent' : 'retry';
}

/** A clip of a batch, as `batchRelease` needs it. */
export interface BatchClip {
  clipId: number;
  /** When it ended (done, error or cancelled), on the simulated clock; null while it runs. */
  endedAt: number | null;
  /** Whether its end sends a webhook: it has a callback_url and ended done or error (true while it runs with one). */
  sendsWebhook: boolean;
}

/** Whether a batch's webhooks can go, and in which order (clip ids), or which clips they wait for. */
export type BatchRelease = { ready: false; waitingFor: number[] } | { ready: true; order: number[] };

/**
 * Out of order (spec 4.2: each clip of a batch has its own webhook): the webhooks of a batch are held
 * until every clip that will send one has ended, then sent in the reverse order of completion (the last
 * to end first; clips that ended together, the later in the batch first), each after the previous one's
 * first attempt is answered. Applies when any clip of the batch carries the marker, or its account has the mode.
 * @example batchRelease([{ clipId: 1, endedAt: 10, sendsWebhook: true }, { clipId: 2, endedAt: 20, sendsWebhook: true }]) // { ready: true, order: [2, 1] }
 */
export function batchRelease(clips: readonly BatchClip[]): BatchRelease {
  const waitingFor = clips.filter((clip) => clip.sendsWebhook && clip.endedAt === null).map((clip) => clip.clipId);
  if (waitingFor.length > 0) return { ready: false, waitingFor };
  const order = clips
    .map((clip, index) => ({ ...clip, index }))
    .filter((clip) => clip.sendsWebhook)
    .sort((a, b) => b.endedAt! - a.endedAt! || b.index - a.index)
    .map((clip) => clip.clipId);
  return { ready: true, order };
}
