import { RelayError } from '../../protocol/errors.js';
import { createChannel } from '../../relay/api.js';
import { Listener, type ListenerEvent, type ListenerReply } from '../../relay/client.js';
import { resolveListenerOptions } from '../../relay/listener-options.js';
import { ChannelState, type SavedChannel } from '../channel-state.js';
import { ExitError } from '../errors.js';
import { inspectListener } from '../listen-inspector.js';
import { flagError, parsePort, stopSignal } from '../process.js';
import { palette, type Palette } from '../output.js';
import { turnWriter } from '../turn-writer.js';
import { httpUrlOf } from '../../http/url.js';

export interface ListenCommandOptions {
  forwardTo?: string;
  relay: string;
  secret?: string;
  /** Forward events whose signature does not verify (debugging signatures). */
  forwardInvalid?: boolean;
  /** Comma-separated HTTP methods to forward, or several flags; POST when not given. */
  methods?: string[];
  /** Comma-separated `X-Service-Event` names, or several flags. */
  events?: string[];
  replay?: string;
  json?: boolean;
  channel?: string;
  token?: string;
  adminToken?: string;
  /** Where the channel made by `listen` is kept, so its URL stays the same across restarts. */
  state: string;
  /**
   * `--inspect <port>`: serve the inspector on 127.0.0.1 (`'0'`, the CLI's default, picks a free port);
   * `false` (`--no-inspect`) or not given: none.
   */
  inspect?: string | false;
}

/** Where the command writes, and what stops it: injectable for tests. */
export interface ListenIo {
  out(line: string): void;
  err(line: string): void;
  signal: AbortSignal;
  now(): Date;
  palette: Palette;
}

/**
 * `cliphook listen`: forwards a relay channel's events to a local URL until stopped. Exits non-zero on
 * what reconnecting cannot heal (a refused token, a deleted or unknown channel) so a supervisor can act.
 */
export async function listen(options: ListenCommandOptions, io: ListenIo = processIo()): Promise<void> {
  const relayUrl = options.relay.replace(/\/+$/, '');
  const forwardTo = options.forwardTo;
  if (forwardTo === undefined) throw new ExitError('--forward-to <url> is required: the local URL to forward webhooks to.', 2);
  if (!httpUrlOf(relayUrl)) throw new ExitError(`--relay must be an http(s) URL, got ${JSON.stringify(relayUrl)}.`, 2);
  if (options.forwardInvalid && !options.secret) throw new ExitError('--forward-invalid needs --secret: without it no signature is checked.', 2);
  const list = (values: string[] | undefined) => values?.flatMap((value) => value.split(',')).map((name) => name.trim()).filter(Boolean);
  const events = list(options.events);
  const methods = list(options.methods)?.map((name) => name.toUpperCase());
  const settings = { relayUrl, forwardTo, forwardInvalid: options.forwardInvalid === true, ...(options.secret ? { secret: options.secret } : {}), ...(events?.length ? { events } : {}), ...(methods?.length ? { methods } : {}) };
  // Checked before a channel is made for them; a mistake names the flag, not the library's option.
  try {
    resolveListenerOptions({ ...settings, channel: 'c', token: 't' });
  } catch (error) {
    throw error instanceof TypeError ? asFlagError(error) : error;
  }
  const inspectPort = options.inspect === undefined || options.inspect === false ? null : parsePort('--inspect', options.inspect);
  const saved = await resolveChannel(options, relayUrl);
  const p = io.palette;
  const stamp = clockStamp(io, p);
  const emit = (record: object, line: string) => io.out(options.json ? JSON.stringify({ time: io.now().toISOString(), ...record }) : `${stamp()}  ${line}`);
  // Every event and reply prints a line, so output is on the hot path: only the form asked for is built.
  const say = options.json
    ? (record: () => object) => io.out(JSON.stringify({ time: io.now().toISOString(), ...record() }))
    : (_record: () => object, line: () => string) => io.out(`${stamp()}  ${line()}`);
  const listener = new Listener({ ...settings, channel: saved.channel, token: saved.token });
  const inspector = inspectPort === null ? null : await inspectListener(inspectPort, listener, {
    options, channel: saved, forwardTo, emit, palette: p, announce: (record, line) => (options.json ? emit(record, '') : io.out(line)),
  });

  const replay = (target: Listener, ref: string) =>
    void target.replay(ref).then(
      (reply) => {
        if (reply === null) emit({ type: 'replay_missing', ref }, p.yellow(`the relay has no buffered event ${ref}`));
      },
      (error: Error) => emit({ type: 'replay_failed', ref, error: error.message }, p.yellow(`replay of ${ref} failed: ${error.message}`)),
    );

  // Handlers go on before the first connection, so a relay that is down at start shows its retries too.
  let ready = false;
  let reconnecting = false;
  listener.on('event', (event) => say(() => ({ type: 'event', ...eventRecord(event) }), () => eventLine(event, p)));
  listener.on('reply', (reply) => say(() => ({ type: 'reply', ...replyRecord(reply) }), () => replyLine(reply, p)));
  listener.on('reconnecting', ({ attempt, error, delayMs }) => {
    reconnecting = true;
    const what = attempt === 0 ? 'connection lost' : `attempt ${attempt} failed`;
    const wait = delayMs > 0 ? `; next try in ${(delayMs / 1000).toFixed(1)} s` : '';
    emit({ type: 'reconnecting', attempt, error: error.message, delayMs }, p.yellow(`${ready ? 'reconnecting' : 'connecting'} to ${relayUrl} (${what}: ${error.message}${wait})`));
  });
  listener.on('connected', () => {
    if (!ready) {
      ready = true;
      reconnecting = false;
      if (options.json) emit({ type: 'ready', url: saved.url, channel: saved.channel, forwardTo, methods: methods?.length ? methods : ['POST'] }, '');
      else io.out(`Ready! Forwarding ${p.bold(saved.url)} -> ${forwardTo} (channel ${saved.channel}; Ctrl-C to stop)`);
      for (const [code, message] of startWarnings(options, methods, forwardTo)) emit({ type: 'warning', code, message }, p.yellow(`warning: ${message}`));
      if (options.replay !== undefined) replay(listener, options.replay);
      return;
    }
    if (!reconnecting) return;
    reconnecting = false;
    emit({ type: 'connected' }, p.green('reconnected'));
  });
  void listener.run();

  const stopped = new Promise<'signal'>((resolve) => {
    if (io.signal.aborted) resolve('signal');
    io.signal.addEventListener('abort', () => resolve('signal'), { once: true });
  });
  try {
    const outcome = await Promise.race([stopped, listener.closed]);
    if (outcome === 'signal') return await listener.close();
    if (outcome instanceof RelayError) throw asExit(outcome, options);
  } finally {
    await inspector?.close();
  }
}

/** The channel from the flags, from the state file, or a new one saved there. */
async function resolveChannel(options: ListenCommandOptions, relayUrl: string): Promise<SavedChannel> {
  if (options.channel !== undefined || options.token !== undefined) {
    if (!options.channel || !options.token) throw new ExitError('--channel and --token go together.', 2);
    return { channel: options.channel, token: options.token, url: `${relayUrl}/in/${options.channel}` };
  }
  const state = await ChannelState.open(options.state);
  const known = state.get(relayUrl);
  if (known) return known;
  let created;
  try {
    created = await createChannel(relayUrl, options.adminToken ? { adminToken: options.adminToken } : {});
  } catch (error) {
    if (!(error instanceof RelayError)) throw error;
    const hint = error.code === 'admin_token_required' ? ' (pass --admin-token)' : error.code === 'invalid_token' ? ' (check --admin-token or CLIPHOOK_ADMIN_TOKEN)' : '';
    throw new ExitError(`${relayUrl}: ${error.message}${hint}`, 1);
  }
  return state.save(relayUrl, created);
}

function asExit(error: unknown, options: ListenCommandOptions): unknown {
  if (!(error instanceof RelayError)) return error;
  const hint = options.channel ? '' : ` (remove its entry from ${options.state} to make a new channel)`;
  return new ExitError(`${error.message}${error.code === 'invalid_token' || error.code === 'channel_not_found' ? hint : ''}`, 1);
}

const FLAGS: Readonly<Record<string, string>> = {
  relayUrl: '--relay', forwardTo: '--forward-to', secret: '--secret', forwardInvalid: '--forward-invalid', methods: '--methods', events: '--events', channel: '--channel', token: '--token',
};

/** A library TypeError about an option, as a usage error about the flag the user typed. */
const asFlagError = (error: TypeError): ExitError => flagError(error, FLAGS);

/** What the developer should know about the flags they started with (the channel URL is a capability). */
function startWarnings(options: ListenCommandOptions, methods: string[] | undefined, forwardTo: string): Array<[string, string]> {
  const warnings: Array<[string, string]> = [];
  if (!options.secret) {
    warnings.push(['no_secret', 'the channel URL is a capability: anyone who has it can send your app requests through it; pass --secret <signing secret> so listen answers unsigned and forged ones itself (401) and re-signs events that waited at the relay']);
  } else if (options.forwardInvalid) {
    warnings.push(['forward_invalid', '--forward-invalid: events whose signature does not verify reach your app too (for debugging signatures only)']);
  }
  const extra = methods?.filter((name) => name !== 'POST') ?? [];
  if (extra.length > 0) warnings.push(['methods', `--methods: whoever has the channel URL can call ${extra.join(', ')} on ${forwardTo} and read the replies`]);
  return warnings;
}

/** `--> video.completed [dlv_…]  sig ✓`, as Stripe CLI shows an incoming event. */
export function eventLine(event: ListenerEvent, p: Palette): string {
  const name = event.eventName ?? `${event.method} ${event.url}`;
  const id = event.deliveryId ? ` [${event.deliveryId}]` : '';
  const sig = event.signatureValid === null ? '' : event.signatureValid ? `  sig ${p.green('✓')}` : `  sig ${p.red('✗')}`;
  return `${p.bold('-->')} ${p.cyan(name)}${id}${sig}${tags(event, p)}`;
}

function tags(event: ListenerEvent, p: Palette): string {
  const all = [event.backlog ? '(buffered)' : '', event.replay ? '(replay)' : '', event.resigned ? '(re-signed)' : ''].filter(Boolean);
  return all.length ? ` ${p.dim(all.join(' '))}` : '';
}

/** `<-- [200] POST http://localhost:3000/webhooks (12 ms)`, or the reason no status came back or listen answered itself. */
export function replyLine(reply: ListenerReply, p: Palette): string {
  const { status, event } = reply;
  const paint = status === null ? p.red : status < 300 ? p.green : status < 400 ? p.yellow : p.red;
  let why = '';
  if (reply.error) why = ` ${p.dim(`${reply.error.code}: ${reply.error.detail}`)}`;
  else if (reply.refused) why = ` ${p.red(`refused by listen, not forwarded: ${reply.refused.code}`)} ${p.dim(reply.refused.detail)}`;
  else if (reply.stale) {
    const kept = event.backlog ? 'kept at the relay for the next connection' : event.replay ? 'still buffered at the relay' : 'the sender gets 502 and retries';
    why = ` ${p.yellow(`stale_delivery, not acknowledged: ${kept}; restart listen with --secret <signing secret> to re-sign events that waited`)}`;
  }
  return `${p.bold('<--')} ${paint(`[${status ?? 'ERR'}]`)} ${event.method} ${event.url} (${reply.durationMs} ms)${tags(event, p)}${why}`;
}

function eventRecord(event: ListenerEvent) {
  // One line per event: the bytes and headers are the inspector's to show (docs/inspector.md).
  const { body: _body, headers: _headers, receivedAt: _receivedAt, ...rest } = event;
  return rest;
}

function replyRecord(reply: ListenerReply) {
  const { event } = reply;
  return { seq: event.seq, status: reply.status, error: reply.error, refused: reply.refused, stale: reply.stale, resigned: event.resigned, durationMs: reply.durationMs, url: event.url };
}

/** `HH:MM:SS`, dimmed, for the text lines: made once a second, not once a line. */
function clockStamp(io: Pick<ListenIo, 'now'>, p: Palette): () => string {
  let second = Number.NaN;
  let text = '';
  return () => {
    const now = io.now();
    const at = Math.floor(now.getTime() / 1000);
    if (at !== second) {
      second = at;
      text = p.dim(now.toTimeString().slice(0, 8));
    }
    return text;
  };
}

function processIo(): ListenIo {
  return {
    // Lines printed in one event-loop turn leave in one write (turn-writer.ts).
    out: turnWriter(process.stdout),
    err: (line) => process.stderr.write(`${line}\n`),
    signal: stopSignal(),
    now: () => new Date(),
    palette: palette(process.stdout),
  };
}
