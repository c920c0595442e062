import type { SharedFileOutbox, Sender } from '../../emitter/shared-file-outbox.js';
import { bullmqQueue } from '../../emitter/bullmq/options.js';
import { createEmitter, type WebhookEmitter } from '../../emitter/emitter.js';
import type { Delivery, DeliveryState } from '../../emitter/types.js';
import { quietLogger } from '../logger.js';
import { redactRedisUrl } from '../../store/redis-url.js';
import { reachRedis } from '../redis-reach.js';
import { ExitError } from '../errors.js';
import { follower, type Follower } from '../follow.js';
import { outboxError, readOutbox, startOutboxEmitter, who } from '../outbox-emitter.js';
import { asJson, attemptLine, failureReason, notRelayedReason, palette, print, sentLine, type Palette } from '../output.js';
import { parseTimeout } from './trigger.js';

export interface DeliveriesOptions {
  outbox: string;
  json?: boolean;
  /** `--redis <url>` (or CLIPHOOK_REDIS_URL): the deliveries of the emitter's BullMQ queue, as `serve --redis` keeps them. */
  redis?: string;
}

const STATES: readonly DeliveryState[] = ['pending', 'delivering', 'delivered', 'failed'];

/** `cliphook deliveries list`: newest first. */
export async function list(options: DeliveriesOptions & { state?: string; limit: string }): Promise<void> {
  if (options.state !== undefined && !STATES.includes(options.state as DeliveryState)) {
    throw new ExitError(`--state expects one of ${STATES.join(', ')}, got ${JSON.stringify(options.state)}`, 2);
  }
  const limit = Number(options.limit);
  if (!(Number.isSafeInteger(limit) && limit > 0)) throw new ExitError(`--limit expects a positive integer, got ${JSON.stringify(options.limit)}`, 2);
  const all = await readAll(options);
  const shown = all.filter((d) => options.state === undefined || d.state === options.state).slice(0, limit);
  if (options.json) return print(JSON.stringify(shown, null, 2));
  if (shown.length === 0) return print(`No deliveries in ${where(options)}${options.state ? ` with state ${options.state}` : ''}.`);
  const p = palette();
  for (const d of shown) {
    const last = d.attempts.at(-1);
    const status = last ? `[${last.status ?? 'ERR'}]` : '[—]';
    const count = `${d.attempts.length} attempt${d.attempts.length === 1 ? '' : 's'}`;
    print(`${d.id}  ${d.event.padEnd(15)}  ${paintState(d.state, p).padEnd(10 + (paintState(d.state, p).length - d.state.length))}  ${status.padEnd(5)}  ${count.padEnd(10)}  ${iso(d.createdAt)}  ${d.url}`);
  }
}

/** `cliphook deliveries show <id>`: one delivery with every attempt and its payload. */
export async function show(id: string, options: DeliveriesOptions): Promise<void> {
  const delivery = (await readAll(options)).find((d) => d.id === id);
  if (!delivery) throw new ExitError(`no delivery ${id} in ${where(options)}`, 1);
  if (options.json) return print(asJson(delivery));
  const p = palette();
  print(`${p.bold(delivery.id)}  ${p.cyan(delivery.event)}  ${paintState(delivery.state, p)}`);
  print(`  url       ${delivery.url}`);
  print(`  created   ${iso(delivery.createdAt)}`);
  if (delivery.nextAttemptAt !== null) print(`  next      ${iso(delivery.nextAttemptAt)}`);
  print(`  retry     ${delivery.retry ? 'on the schedule' : 'one attempt only'}`);
  print(`  attempts  ${delivery.attempts.length}`);
  for (const [i, a] of delivery.attempts.entries()) {
    const outcome = a.status !== null ? `[${a.status}]` : `[ERR] ${a.error ?? ''}`;
    const body = a.response ? `  ${p.dim(oneLine(a.response))}` : '';
    print(`    ${String(i + 1).padStart(2)}. ${iso(a.at)}  ${outcome}  ${a.latencyMs} ms${body}`);
  }
  print('  payload');
  for (const line of JSON.stringify(delivery.payload, null, 2).split('\n')) print(`    ${line}`);
}

/** `cliphook deliveries redeliver <id>`: the same delivery id, a fresh `delivered_at` and signature. */
export async function redeliver(id: string, options: DeliveriesOptions & { retry?: boolean; timeout: string }): Promise<void> {
  const timeoutMs = parseTimeout(options.timeout);
  const p = palette();
  if (options.redis !== undefined) return redeliverOnRedis(id, options, timeoutMs, p);
  let follow!: Follower;
  const { emitter, outbox } = await startOutboxEmitter(options.outbox, timeoutMs, (e) => (follow = follower(e, p, { quiet: Boolean(options.json) })));
  try {
    follow.announceResumed(options.outbox, id);
    // Another process's trigger --retry may be sending it: two senders would send every attempt twice.
    const busy = outbox.heldBy(id) ?? (emitter.get(id) ? await claim(outbox, id, options.outbox) : undefined);
    if (busy) throw new ExitError(`delivery ${id} is being sent by ${who(busy.holder)}, a running trigger or redeliver; redeliver it once that one has ended`, 1);
    if (!emitter.get(id)) throw new ExitError(`no delivery ${id} in ${options.outbox}`, 1);
    const again = await emitter.redeliver(id, { retry: Boolean(options.retry) });
    if (!options.json) print(sentLine(again, p));
    const done = await follow.follow(id);
    if (options.json) print(asJson(done));
    if (done.state !== 'delivered') throw new ExitError(failureReason(done), 1);
    const filtered = notRelayedReason(done);
    if (filtered) throw new ExitError(filtered, 1);
  } finally {
    await emitter.stop();
    follow.close();
  }
}

/** Every delivery, newest first: from the outbox file, or from the BullMQ queue with `--redis`. */
async function readAll(options: DeliveriesOptions): Promise<Delivery[]> {
  if (options.redis === undefined) return readOutbox(options.outbox);
  // Reading only: this process takes no attempts from the queue.
  const emitter = await startRedisEmitter(options.redis, 10_000, { worker: false });
  try {
    return emitter.list({ limit: Math.max(1, emitter.stats.total) });
  } finally {
    await emitter.stop();
  }
}

function where(options: DeliveriesOptions): string {
  return options.redis === undefined ? options.outbox : redactRedisUrl(options.redis);
}

/**
 * An emitter on the queue `serve --redis` uses (BullMQ's default queue on that Redis): it loads every
 * record. With `worker: false` it makes no attempts; otherwise it is one more worker while it runs.
 */
async function startRedisEmitter(url: string, timeoutMs: number, { worker = true }: { worker?: boolean } = {}): Promise<WebhookEmitter> {
  await reachRedis(url, '--redis');
  let emitter: WebhookEmitter;
  try {
    emitter = createEmitter({ queue: bullmqQueue({ url, worker }), allowPrivateNetworks: true, timeoutMs, logger: quietLogger });
  } catch (error) {
    throw new ExitError(String((error as Error).message).replace('`url`', '--redis'), 2);
  }
  try {
    await emitter.start();
  } catch (error) {
    await emitter.stop().catch(() => undefined);
    throw new ExitError(`cannot use the deliveries in ${redactRedisUrl(url)}: ${(error as Error).message}`, 1);
  }
  return emitter;
}

/**
 * Redelivers through the queue: whichever process takes the job (a serve worker, or this one) makes the
 * attempt, so its outcome is read from the records every process shares, not from this one's events.
 */
async function redeliverOnRedis(id: string, options: DeliveriesOptions & { retry?: boolean }, timeoutMs: number, p: Palette): Promise<void> {
  const emitter = await startRedisEmitter(options.redis!, timeoutMs);
  try {
    const before = emitter.get(id);
    if (!before) throw new ExitError(`no delivery ${id} in ${where(options)}`, 1);
    if (before.state === 'delivering') throw new ExitError(`delivery ${id} is being attempted right now; redeliver it once that attempt has ended`, 1);
    const again = await emitter.redeliver(id, { retry: Boolean(options.retry) });
    if (!options.json) print(sentLine(again, p));
    let seen = before.attempts.length;
    let done: Delivery;
    for (;;) {
      const now = emitter.get(id);
      if (!now) throw new ExitError(`delivery ${id} was forgotten (past the emitter's retention) before its attempt ended`, 1);
      for (const attempt of now.attempts.slice(seen)) if (!options.json) print(attemptLine(now.url, attempt, p));
      seen = now.attempts.length;
      if (seen > before.attempts.length && (now.state === 'delivered' || now.state === 'failed')) {
        done = now;
        break;
      }
      // The records change by the queue's own messages; this only looks at this process's copy of them.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (options.json) print(asJson(done));
    if (done.state !== 'delivered') throw new ExitError(failureReason(done), 1);
  } finally {
    await emitter.stop();
  }
}

/** Makes `id` this process's to send; the live process sending it instead, if another took it first. */
async function claim(outbox: SharedFileOutbox, id: string, file: string): Promise<Sender | undefined> {
  try {
    return await outbox.claim(id);
  } catch (error) {
    throw outboxError(file, error);
  }
}

function paintState(state: DeliveryState, p: Palette): string {
  return state === 'delivered' ? p.green(state) : state === 'failed' ? p.red(state) : p.yellow(state);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 80 ? `${flat.slice(0, 80)}…` : flat;
}
