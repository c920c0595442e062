import { CliphookError, FileLockedError } from '../../protocol/errors.js';
import type { WebhookEventName } from '../../protocol/events.js';
import { classifyReply } from '../../protocol/schedule.js';
import { MAX_TIMEOUT_MS } from '../../emitter/options.js';
import type { Delivery } from '../../emitter/types.js';
import { ExitError } from '../errors.js';
import { buildEvent } from '../event-template.js';
import { follower, type Follower } from '../follow.js';
import { asJson, bufferedReason, failureReason, notRelayedReason, palette, print, sentLine } from '../output.js';
import { outboxError, startOutboxEmitter } from '../outbox-emitter.js';

export interface TriggerOptions {
  /** Required; checked here so a missing one is a usage error (exit 2). */
  url?: string;
  /** Required (or CLIPHOOK_SECRET); checked here. */
  secret?: string;
  errorCode?: string;
  set?: string[];
  json?: boolean;
  retry?: boolean;
  /** The outbox file the delivery is recorded in. */
  outbox: string;
  /** Per-attempt timeout in milliseconds, as given on the command line. */
  timeout: string;
}

/**
 * `cliphook trigger <event>`: sends one signed test event through the emitter, as the service would.
 * Private addresses are allowed (it is a development tool). Pending deliveries the outbox held that no
 * other running process is sending are resumed and printed too. Exit 0 when delivered, 1 when not (or
 * when a relay passed it to no listener, or kept it for want of one), 2 for usage errors.
 */
export async function trigger(event: string, options: TriggerOptions): Promise<void> {
  const { url, secret } = options;
  if (!url) throw new ExitError('trigger needs --url <url>, where to POST the event', 2);
  if (!secret) throw new ExitError('trigger needs --secret <secret> (or CLIPHOOK_SECRET), the signing secret', 2);
  const timeoutMs = parseTimeout(options.timeout);
  const payload = await buildEvent(event, { errorCode: options.errorCode, set: options.set ?? [] });
  const p = palette();
  let follow!: Follower;
  const { emitter } = await startOutboxEmitter(options.outbox, timeoutMs, (e) => (follow = follower(e, p, { quiet: Boolean(options.json) })));
  try {
    follow.announceResumed(options.outbox);
    let sent;
    try {
      sent = await emitter.send({ url, secret, event: event as WebhookEventName, payload, retry: Boolean(options.retry) });
    } catch (error) {
      if (error instanceof FileLockedError) throw outboxError(options.outbox, error);
      // A refused URL or a payload that --set broke: the user's input, hence a usage error.
      if (error instanceof CliphookError || error instanceof TypeError) throw new ExitError(error.message, 2);
      throw error;
    }
    if (!options.json) print(sentLine(sent, p));
    const done = await follow.follow(sent.id);
    if (options.json) print(asJson(done));
    if (done.state !== 'delivered') {
      const buffered = bufferedReason(done);
      if (buffered) throw new ExitError(buffered, 1);
      const hint = !options.retry && retryable(done) ? ' (add --retry to follow the retry schedule)' : '';
      throw new ExitError(failureReason(done) + hint, 1);
    }
    const filtered = notRelayedReason(done);
    if (filtered) throw new ExitError(filtered, 1);
  } finally {
    await emitter.stop();
    follow.close();
  }
}

/** True when the schedule would have tried again: worth a hint about --retry. */
function retryable(delivery: Delivery): boolean {
  const last = delivery.attempts.at(-1);
  return last !== undefined && classifyReply(last.status ?? new Error(last.error ?? '')) === 'retry';
}

/** Parses `--timeout`. */
export function parseTimeout(text: string): number {
  const ms = Number(text);
  if (!(Number.isFinite(ms) && ms > 0 && ms <= MAX_TIMEOUT_MS)) {
    throw new ExitError(`--timeout expects milliseconds > 0 and at most ${MAX_TIMEOUT_MS}, got ${JSON.stringify(text)}`, 2);
  }
  return ms;
}
