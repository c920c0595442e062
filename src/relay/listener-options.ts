import { realScheduler, type Scheduler } from './heartbeat.js';
import type { ListenerOptions, ReconnectOptions } from './listener-types.js';
import { fn, httpUrl, nonEmptyString, positiveInteger } from './validate.js';

/** Defaults for the local hop. */
const DEFAULT_LOCAL_TIMEOUT_MS = 8_500;
// Webhooks are POSTs; anything else through a channel URL is someone calling the local app.
const DEFAULT_METHODS: readonly string[] = ['POST'];
const METHOD = /^[A-Za-z][A-Za-z-]*$/;

export interface ResolvedListenerOptions {
  relayUrl: string;
  channel: string;
  token: string;
  /** `forwardTo`, parsed. */
  forwardTo: URL;
  secret: string | readonly string[] | undefined;
  forwardInvalid: boolean;
  /** Upper-case method names. */
  methods: ReadonlySet<string>;
  events: readonly string[] | undefined;
  localTimeoutMs: number;
  maxReplyBytes: number;
  pingIntervalMs: number;
  readDeadlineMs: number;
  clock: () => number;
  scheduler: Scheduler;
  reconnect: Required<ReconnectOptions>;
}

/** Applies the defaults and checks every option, so a misconfiguration fails at start-up. */
export function resolveListenerOptions(options: ListenerOptions): ResolvedListenerOptions {
  const {
    relayUrl, channel, token, forwardTo, secret, events, reconnect = {}, forwardInvalid = false, methods = DEFAULT_METHODS,
    localTimeoutMs = DEFAULT_LOCAL_TIMEOUT_MS, maxReplyBytes = 1024 * 1024,
    pingIntervalMs = 10_000, readDeadlineMs = 20_000, clock = Date.now, scheduler = realScheduler,
  } = options;
  httpUrl('relayUrl', relayUrl, true);
  nonEmptyString('channel', channel);
  nonEmptyString('token', token);
  const forwardToUrl = httpUrl('forwardTo', forwardTo);
  if (secret !== undefined && (typeof secret === 'string' ? secret === '' : !Array.isArray(secret) || secret.length === 0 || secret.some((one) => typeof one !== 'string' || one === ''))) {
    throw new TypeError(`Expected \`secret\` to be a non-empty string or array, got ${JSON.stringify(secret)}.`);
  }
  if (typeof forwardInvalid !== 'boolean') throw new TypeError(`Expected \`forwardInvalid\` to be a boolean, got ${JSON.stringify(forwardInvalid)}.`);
  if (!Array.isArray(methods) || methods.length === 0 || methods.some((name) => typeof name !== 'string' || !METHOD.test(name))) {
    throw new TypeError(`Expected \`methods\` to be a non-empty array of HTTP method names, got ${JSON.stringify(methods)}.`);
  }
  if (events !== undefined && (!Array.isArray(events) || events.some((name) => typeof name !== 'string' || !/^[\w.-]+$/.test(name)))) {
    throw new TypeError(`Expected \`events\` to be an array of event names, got ${JSON.stringify(events)}.`);
  }
  positiveInteger('localTimeoutMs', localTimeoutMs);
  positiveInteger('maxReplyBytes', maxReplyBytes);
  positiveInteger('pingIntervalMs', pingIntervalMs);
  positiveInteger('readDeadlineMs', readDeadlineMs);
  if (readDeadlineMs <= pingIntervalMs) throw new TypeError(`Expected \`readDeadlineMs\` (${readDeadlineMs}) to be above \`pingIntervalMs\` (${pingIntervalMs}).`);
  fn('clock', clock);
  const { minTimeout = 500, maxTimeout = 30_000, factor = 2, randomize = true } = reconnect;
  if (!(minTimeout >= 0 && maxTimeout >= minTimeout && factor >= 1)) {
    throw new TypeError(`Expected \`reconnect\` to have 0 <= minTimeout <= maxTimeout and factor >= 1, got ${JSON.stringify(reconnect)}.`);
  }
  return {
    relayUrl, channel, token, forwardTo: forwardToUrl, secret, forwardInvalid, methods: new Set(methods.map((name) => name.toUpperCase())), events, localTimeoutMs, maxReplyBytes, pingIntervalMs, readDeadlineMs, clock, scheduler,
    reconnect: { minTimeout, maxTimeout, factor, randomize },
  };
}
