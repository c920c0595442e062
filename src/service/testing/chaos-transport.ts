import { randomBytes } from 'node:crypto';
import type { Transport, TransportReply, TransportRequest } from '../../emitter/index.js';
import { HEADER_DELIVERY, HEADER_SIGNATURE } from '../../protocol/headers.js';
import { sign } from '../../protocol/signature.js';
import { attemptOutcome, planAttempt, type ChaosMode, type PlannedSend } from './chaos.js';

/** What the service tells the chaos about a delivery before handing it to the emitter. */
export interface ChaosDelivery {
  /** Its modes (a clip's markers and its account's modes together). */
  modes: readonly ChaosMode[];
  /** The webhook secret the emitter signs it with. */
  secret: string;
  /** The key's secret before its last rotation, if it was ever rotated. */
  previousSecret: string | undefined;
}

interface Entry extends ChaosDelivery {
  /** The emitter's attempt being made (1 for the first), as it told `attempting`. */
  attempts: number;
}

/**
 * Deliveries with chaos kept at once; the oldest are forgotten first (they then go out plainly). A
 * delivery's chaos is about its first attempt and its signing secret, so this bounds memory, not behaviour
 * a test sees.
 */
export const MAX_CHAOS_DELIVERIES = 10_000;

/** The error a cut attempt ends with: a dropped connection without a code, so the emitter does not retry it at once but on the schedule. */
export class CutAnswerError extends Error {
  constructor() {
    super('webhook_cut: the receiver answered, but the answer was discarded as a dropped connection loses it');
    this.name = 'CutAnswerError';
  }
}

/**
 * Webhook chaos at the wire: the service's emitter sends through `wrap(transport)`, which makes
 * each attempt of a registered delivery the requests `planAttempt` lists — copies, a concurrent twin, a
 * backdated replay, the previous secret's signature, an answer thrown away — and answers the emitter as
 * `attemptOutcome` decides. Deliveries nobody registered pass through untouched. In memory: a restart
 * forgets the chaos of deliveries still pending (they are retried plainly).
 */
export class WebhookChaos {
  readonly #entries = new Map<string, Entry>();
  /** Whether the emitter tells each attempt's number (`attempting`); otherwise each transport call counts as one. */
  #counted = false;
  /** Waiters for a delivery's first attempt to be answered (a batch's out-of-order release). */
  readonly #firstAnswered = new Map<string, { promise: Promise<void>; resolve: () => void }>();

  /** Shapes the attempts of delivery `id` from now on. */
  register(id: string, delivery: ChaosDelivery): void {
    this.#entries.delete(id);
    this.#entries.set(id, { ...delivery, modes: [...delivery.modes], attempts: 0 });
    while (this.#entries.size > MAX_CHAOS_DELIVERIES) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** Whether delivery `id` has chaos. */
  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /**
   * The emitter starts attempt `n` of delivery `id` (1 for the first). An attempt's quick retries of a
   * connection that failed before any answer call the transport again within the same attempt: they are
   * the same attempt, not the next.
   */
  attempting(id: string, n: number): void {
    this.#counted = true;
    const entry = this.#entries.get(id);
    if (entry) entry.attempts = n;
  }

  /** Stops waiting for delivery `id`'s first answer (a batch's release gave up waiting). */
  stopWaiting(id: string): void {
    this.#firstAnswered.delete(id);
  }

  /** Resolves once the first attempt of delivery `id` has its answer (or its error). */
  firstAnswered(id: string): Promise<void> {
    let waiter = this.#firstAnswered.get(id);
    if (!waiter) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      waiter = { promise, resolve };
      this.#firstAnswered.set(id, waiter);
    }
    return waiter.promise;
  }

  /** Forgets every delivery (the service's reset), releasing whoever waits. */
  clear(): void {
    this.#entries.clear();
    for (const waiter of this.#firstAnswered.values()) waiter.resolve();
    this.#firstAnswered.clear();
  }

  /** The emitter's transport, with the chaos of registered deliveries around it. */
  wrap(transport: Transport): Transport {
    return async (request) => {
      const id = request.headers[HEADER_DELIVERY];
      const entry = id === undefined ? undefined : this.#entries.get(id);
      if (!entry || id === undefined) return transport(request);
      // Without the emitter's count (a test driving the wrapper alone), each call is the next attempt.
      if (!this.#counted) entry.attempts += 1;
      try {
        return await this.#attempt(transport, request, entry);
      } finally {
        if (entry.attempts === 1) this.#answered(id);
      }
    };
  }

  #answered(id: string): void {
    const waiter = this.#firstAnswered.get(id);
    if (waiter) {
      waiter.resolve();
      this.#firstAnswered.delete(id);
    } else {
      // Nobody waits yet: a later `firstAnswered` finds it settled.
      this.#firstAnswered.set(id, { promise: Promise.resolve(), resolve: () => undefined });
      while (this.#firstAnswered.size > MAX_CHAOS_DELIVERIES) this.#firstAnswered.delete(this.#firstAnswered.keys().next().value!);
    }
  }

  async #attempt(transport: Transport, request: TransportRequest, entry: Entry): Promise<TransportReply> {
    const plan = planAttempt({ modes: entry.modes, attempt: entry.attempts, hasPreviousSecret: entry.previousSecret !== undefined });
    const replies: Array<TransportReply | Error> = new Array(plan.sends.length);
    const sendOne = async (index: number) => {
      try {
        replies[index] = await transport(shaped(request, plan.sends[index]!, entry));
      } catch (error) {
        replies[index] = error instanceof Error ? error : new Error(String(error));
      }
    };
    // The first send and its concurrent twin start together; every later one waits for the one before.
    const opening = plan.sends.flatMap((send, index) => (send.timing === 'after_previous' ? [] : [index]));
    await Promise.all(opening.map(sendOne));
    for (const [index, send] of plan.sends.entries()) if (send.timing === 'after_previous') await sendOne(index);

    const outcome = attemptOutcome(plan, replies.map((reply) => (reply instanceof Error ? reply : reply.status)));
    const deciding = plan.sends.flatMap((send, index) => (send.answer === 'decides' ? [replies[index]!] : []));
    const withStatus = deciding.filter((reply): reply is TransportReply => !(reply instanceof Error));
    if (outcome === 'delivered') return withStatus.find((reply) => reply.status >= 200 && reply.status < 300)!;
    if (outcome === 'permanent') return withStatus.find((reply) => reply.status >= 400 && reply.status < 500) ?? withStatus[0]!;
    if (withStatus.length > 0) return withStatus[0]!;
    const error = deciding.find((reply): reply is Error => reply instanceof Error);
    if (error) throw error;
    // Every send's answer was discarded (webhook_cut).
    throw new CutAnswerError();
  }
}

/** The request of one planned send: the attempt's, re-signed, backdated or under a fresh delivery id as the plan says. */
function shaped(request: TransportRequest, send: PlannedSend, entry: Entry): TransportRequest {
  if (send.secret === 'current' && send.backdateMs === 0 && send.deliveryId === 'same') return request;
  const body = send.backdateMs === 0 ? request.body : backdated(request.body, send.backdateMs);
  const secret = send.secret === 'previous' ? entry.previousSecret! : entry.secret;
  const headers: Record<string, string> = { ...request.headers, [HEADER_SIGNATURE]: sign(body, secret) };
  if (send.deliveryId === 'fresh') headers[HEADER_DELIVERY] = `dlv_${randomBytes(12).toString('hex')}`;
  return { ...request, headers, body };
}

const DELIVERED_AT = /"delivered_at":"([^"]+)"\}$/;

/** The body with its trailing `delivered_at` (the emitter appends it to every attempt) moved `ms` into the past. */
export function backdated(body: Buffer, ms: number): Buffer {
  const text = body.toString('utf8');
  const match = DELIVERED_AT.exec(text);
  if (!match) throw new TypeError('Expected a webhook body that ends with its delivered_at.');
  const at = new Date(Date.parse(match[1]!) - ms).toISOString();
  return Buffer.from(`${text.slice(0, match.index)}"delivered_at":"${at}"}`, 'utf8');
}
