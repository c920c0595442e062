import type { Delivery, DeliveryAttempt } from '../emitter/types.js';

type Paint = (text: string) => string;

/** ANSI styles, or plain text when colour is off. */
export interface Palette {
  bold: Paint;
  dim: Paint;
  green: Paint;
  yellow: Paint;
  red: Paint;
  cyan: Paint;
}

const code = (open: number, close: number): Paint => (text) => `\u001b[${open}m${text}\u001b[${close}m`;
const plain: Paint = (text) => text;

/**
 * Colour only on a terminal. FORCE_COLOR turns it on for a pipe (FORCE_COLOR=0 off, as in Node), and
 * NO_COLOR (any non-empty value) turns it off whatever else is set.
 */
export function palette(stream: NodeJS.WriteStream = process.stdout): Palette {
  const env = process.env;
  // https://no-color.org: a user's NO_COLOR beats a FORCE_COLOR that a CI runner or a tool set.
  const on = env.NO_COLOR ? false : env.FORCE_COLOR !== undefined ? env.FORCE_COLOR !== '0' : Boolean(stream.isTTY);
  if (!on) return { bold: plain, dim: plain, green: plain, yellow: plain, red: plain, cyan: plain };
  return { bold: code(1, 22), dim: code(2, 22), green: code(32, 39), yellow: code(33, 39), red: code(31, 39), cyan: code(36, 39) };
}

/** Writes one line to stdout. */
export function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** `--> video.failed [dlv_…]`, as Stripe CLI shows an event going out. */
export function sentLine(delivery: Pick<Delivery, 'event' | 'id'>, p: Palette): string {
  return `${p.bold('-->')} ${p.cyan(delivery.event)} [${delivery.id}]`;
}

/** `<-- [200] POST http://localhost:3000/webhooks (12 ms)`, with the error when no status came back. */
export function attemptLine(url: string, attempt: DeliveryAttempt, p: Palette): string {
  const status = attempt.status;
  const paint = status === null ? p.red : status < 300 ? p.green : status < 400 ? p.yellow : p.red;
  const tag = paint(`[${status ?? 'ERR'}]`);
  const tail = attempt.error ? ` ${p.dim(attempt.error)}` : '';
  return `${p.bold('<--')} ${tag} POST ${url} (${attempt.latencyMs} ms)${tail}`;
}

/** "in 30 s", "in 2 min", "in 2 h" */
export function humanDelay(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

/** The one-line reason a delivery failed, for the exit message. */
export function failureReason(delivery: Delivery): string {
  const last = delivery.attempts.at(-1);
  const count = delivery.attempts.length;
  const after = `after ${count} attempt${count === 1 ? '' : 's'}`;
  if (!last) return `delivery ${delivery.id} failed`;
  if (last.status === null) return `delivery ${delivery.id} failed ${after}: ${last.error ?? 'no reply'}`;
  const permanent = last.status >= 400 && last.status < 500 ? '; a 4xx is permanent, not retried' : '';
  return `delivery ${delivery.id} failed ${after}: the receiver answered ${last.status}${permanent}`;
}

/**
 * Why a delivered delivery still reached no app, or `null`: a relay answers 202
 * `{"relayed":false,"reason":"filtered_by_listener"}` when no connected `cliphook listen` wants the event,
 * which the emitter rightly counts as delivered (a 2xx) but the user of `trigger` must hear about.
 */
export function notRelayedReason(delivery: Delivery): string | null {
  const last = delivery.attempts.at(-1);
  if (delivery.state !== 'delivered' || last?.status !== 202 || !last.response) return null;
  let reply: unknown;
  try {
    reply = JSON.parse(last.response);
  } catch {
    return null; // an app's own 202
  }
  const { relayed, reason } = (reply ?? {}) as { relayed?: unknown; reason?: unknown };
  if (relayed !== false || reason !== 'filtered_by_listener') return null;
  return `delivery ${delivery.id} reached the relay, but no listener wanted ${delivery.event} (202 filtered_by_listener), so nothing reached your app; ` +
    'check the --events of `cliphook listen`';
}

/**
 * Why a delivery that did not reach the app is still on its way, or `null`: a relay with no `cliphook
 * listen` on the channel keeps the event and answers 503 `no_listener` (docs/relay.md), which the emitter
 * counts as a failed attempt but is not a receiver answering 503.
 */
export function bufferedReason(delivery: Delivery): string | null {
  const last = delivery.attempts.at(-1);
  if (last?.status !== 503 || !last.response) return null;
  let reply: unknown;
  try {
    reply = JSON.parse(last.response);
  } catch {
    return null; // an app's own 503
  }
  if ((reply as { code?: unknown } | null)?.code !== 'no_listener') return null;
  return `delivery ${delivery.id} is buffered at the relay: no \`cliphook listen\` is connected to that channel (503 no_listener); ` +
    'the relay passes it on when one connects';
}

/** A delivery without its secret, ready for `--json`. */
export function asJson(delivery: Delivery): string {
  return JSON.stringify(delivery, null, 2);
}
