// `cliphook inbox list|show|replay|purge`, on a receiver's file or Redis inbox.
import { existsSync } from 'node:fs';
import { FileLockedError, InboxError } from '../../protocol/errors.js';
import { FileInboxBackend } from '../../receiver/inbox/file-backend.js';
import { INBOX_STATES, type InboxBackend, type InboxRecord, type InboxState } from '../../receiver/inbox/record.js';
import { RedisInboxBackend } from '../../receiver/inbox/redis-backend.js';
import { assertRedisUrl } from '../../store/redis-url.js';
import { reachRedis } from '../redis-reach.js';
import { ExitError } from '../errors.js';
import { who } from '../outbox-emitter.js';
import { palette, print, type Palette } from '../output.js';

export interface InboxCommandOptions {
  /** The file inbox (`createReceiver({ inbox: true })` keeps `.cliphook/inbox.json`). */
  file: string;
  /** `--redis <url>` (or CLIPHOOK_REDIS_URL): the Redis inbox instead. */
  redis?: string;
  /** Redis key prefix, as the app's `inbox.prefix`. */
  prefix: string;
  json?: boolean;
}

/** `cliphook inbox list`: newest first. */
export async function list(options: InboxCommandOptions & { state?: string; limit: string }): Promise<void> {
  if (options.state !== undefined && !INBOX_STATES.includes(options.state as InboxState)) {
    throw new ExitError(`--state expects one of ${INBOX_STATES.join(', ')}, got ${JSON.stringify(options.state)}`, 2);
  }
  const limit = Number(options.limit);
  if (!(Number.isSafeInteger(limit) && limit > 0)) throw new ExitError(`--limit expects a positive integer, got ${JSON.stringify(options.limit)}`, 2);
  const records = await withInbox(options, 'read', (inbox) => inbox.list(options.state as InboxState | undefined, limit));
  if (options.json) return print(JSON.stringify(records, null, 2));
  if (records.length === 0) return print(`No events in the inbox${options.state ? ` with state ${options.state}` : ''}.`);
  const p = palette();
  for (const r of records) {
    const state = paint(r.state, p);
    const error = r.lastError ? `  ${p.dim(oneLine(r.lastError))}` : '';
    print(`${r.id}  ${r.name.padEnd(15)}  ${state.padEnd(7 + state.length - r.state.length)}  ${`${r.attempts} run${r.attempts === 1 ? '' : 's'}`.padEnd(7)}  ${iso(r.receivedAt)}  ${r.source}${error}`);
  }
}

/** `cliphook inbox show <id>`: one event with its state, runs, last error and body. */
export async function show(id: string, options: InboxCommandOptions): Promise<void> {
  const record = await withInbox(options, 'read', (inbox) => inbox.get(id));
  if (!record) throw new ExitError(`no event ${id} in the inbox`, 1);
  if (options.json) return print(JSON.stringify(record, null, 2));
  const p = palette();
  print(`${p.bold(record.id)}  ${p.cyan(record.name)}  ${paint(record.state, p)}`);
  print(`  source    ${record.source}`);
  print(`  delivery  ${record.deliveryId}`);
  print(`  received  ${iso(record.receivedAt)}`);
  print(`  runs      ${record.attempts}`);
  if (record.nextAttemptAt !== null) print(`  next      ${iso(record.nextAttemptAt)}`);
  if (record.finishedAt !== null) print(`  finished  ${iso(record.finishedAt)}`);
  if (record.lastError !== null) print(`  error     ${record.lastError}`);
  print('  body');
  let body: unknown = record.body;
  try {
    body = JSON.parse(record.body);
  } catch {
    // Shown as it is stored.
  }
  for (const line of (typeof body === 'string' ? body : JSON.stringify(body, null, 2)).split('\n')) print(`    ${line}`);
}

/** `cliphook inbox replay <id>`: a dead or done event runs again (`source: 'replay'`). */
export async function replay(id: string, options: InboxCommandOptions): Promise<void> {
  const record = await withInbox(options, 'write', (inbox) => inbox.replay(id, Date.now()));
  if (options.json) return print(JSON.stringify(record, null, 2));
  // A file inbox is only read by its app at start (it holds the lock while it runs); a Redis one, live.
  print(options.redis === undefined ? `${id} is pending again: the app runs it at its next start.` : `${id} is pending again: a running receiver takes it within a second.`);
}

/** `cliphook inbox purge --state dead|done [--before <time>]`: drops what finished before then. */
export async function purge(options: InboxCommandOptions & { state?: string; before?: string }): Promise<void> {
  if (options.state === undefined) throw new ExitError('inbox purge needs --state dead or --state done (pending and running events are never dropped)', 2);
  if (options.state !== 'dead' && options.state !== 'done') throw new ExitError(`--state expects dead or done (pending and running events are never dropped), got ${JSON.stringify(options.state)}`, 2);
  const before = options.before === undefined ? Date.now() : parseBefore(options.before);
  const state = options.state;
  const count = await withInbox(options, 'write', (inbox) => inbox.purge(state, before));
  if (options.json) return print(JSON.stringify({ purged: count }));
  print(`Purged ${count} ${state} event${count === 1 ? '' : 's'} finished before ${iso(before)}.`);
}

/** An ISO 8601 date, or date and time (with seconds, fraction and offset optional): what `--before` takes besides an age. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * `--before`: an ISO 8601 time, or an age such as 30m, 12h or 7d (that long ago). Nothing else: a bare
 * number is neither (`Date.parse('48')` is the year 2048, which would purge every event).
 */
export function parseBefore(text: string, now = Date.now()): number {
  const age = /^(\d{1,6})([smhd])$/.exec(text);
  if (age) return now - Number(age[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as 's' | 'm' | 'h' | 'd'];
  const at = ISO_TIME.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(at)) throw new ExitError(`--before expects an ISO 8601 time (2026-12-01 or 2026-12-01T08:00:00Z) or an age such as 30m, 12h or 7d, got ${JSON.stringify(text)}`, 2);
  return at;
}

/**
 * Opens the inbox, runs `use`, closes it. A file inbox is one process's at a time: while the app runs it
 * holds `<file>.lock`, and this refuses in one line rather than reading a file being written or writing
 * beside it. To `read`, a file is opened read-only: a lock left by an app that died stays where it is, and
 * nothing is written (not even what the app's next start will decide about the events it was running).
 */
async function withInbox<T>(options: InboxCommandOptions, mode: 'read' | 'write', use: (inbox: InboxBackend) => Promise<T>): Promise<T> {
  let inbox: InboxBackend;
  try {
    if (options.redis !== undefined) {
      assertRedisUrl(options.redis, '--redis');
      await reachRedis(options.redis, '--redis');
      // Retention is the app's: this never drops done records by its own count or age.
      inbox = new RedisInboxBackend({ redis: options.redis, prefix: options.prefix, keepDone: Number.MAX_SAFE_INTEGER, keepDoneMs: Number.POSITIVE_INFINITY });
    } else {
      if (![options.file, `${options.file}.journal`, `${options.file}.lock`].some((path) => existsSync(path))) throw new ExitError(`no inbox at ${options.file}: give the app's inbox file with --file, or --redis`, 1);
      inbox = new FileInboxBackend({ file: options.file, keepDone: Number.MAX_SAFE_INTEGER, keepDoneMs: Number.POSITIVE_INFINITY, clock: Date.now, readOnly: mode === 'read' });
    }
  } catch (error) {
    if (error instanceof FileLockedError) {
      throw new ExitError(
        `cannot open the inbox: ${options.file} is in use by ${who(error.holder)} (lock ${options.file}.lock); a file inbox is its app's while the app runs: stop the app, or use receiver.inbox in it (a Redis inbox works live)`,
        1,
      );
    }
    if (error instanceof TypeError) throw new ExitError(error.message.replace('`--redis`', '--redis'), 2);
    throw error;
  }
  try {
    await inbox.open();
    return await use(inbox);
  } catch (error) {
    if (error instanceof InboxError) throw new ExitError(error.message, 1);
    throw new ExitError(`cannot use the inbox ${inbox.where}: ${(error as Error)?.message ?? String(error)}`, 1);
  } finally {
    await inbox.close().catch(() => undefined);
  }
}

function paint(state: InboxState, p: Palette): string {
  return state === 'done' ? p.green(state) : state === 'dead' ? p.red(state) : p.yellow(state);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 60 ? `${flat.slice(0, 60)}…` : flat;
}
