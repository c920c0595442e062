import { readFile, rm, writeFile } from 'node:fs/promises';
import { isWebhookEventName } from '../protocol/events.js';
import type { DeliveryRecord, DeliveryState } from './types.js';

/**
 * The outbox file's format, shared by `FileOutbox` (one process) and `SharedFileOutbox` (the CLI's
 * processes): `{"version":1,"deliveries":[` then one delivery per line, then `]}`.
 */
export const OPEN = Buffer.from('{"version":1,"deliveries":[\n');
export const SEPARATOR = Buffer.from(',\n');
export const CLOSE = Buffer.from('\n]}\n');

const STATES: readonly DeliveryState[] = ['pending', 'delivering', 'delivered', 'failed'];

/** Bytes of their own: a pooled Buffer would keep an 8 KiB slab alive for as long as any line cut from it. */
export function utf8(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text, 'utf8');
  return bytes;
}

/** One delivery's line; `owner` names the process sending it, for `SharedFileOutbox`. */
export function serialiseRecord(r: DeliveryRecord, owner?: string): string {
  const head = JSON.stringify({
    id: r.id, url: r.url, secret: r.secret, event: r.event, state: r.state, retry: r.retry,
    createdAt: r.createdAt, nextAttemptAt: r.nextAttemptAt, round: r.round, attempts: r.attempts,
    ...(owner === undefined ? {} : { owner }),
  });
  // The payload is already JSON: spliced in as is, it stays readable in the file and costs no re-encoding.
  return `${head.slice(0, -1)},"payload":${r.payload}}`;
}

/** A stored delivery as a record, or `null` when it is not one. */
export function toRecord(row: unknown): DeliveryRecord | null {
  if (typeof row !== 'object' || row === null) return null;
  const r = row as Record<string, unknown>;
  const ok =
    typeof r.id === 'string' && typeof r.url === 'string' && typeof r.secret === 'string' && isWebhookEventName(r.event) &&
    STATES.includes(r.state as DeliveryState) && typeof r.createdAt === 'number' &&
    (r.nextAttemptAt === null || typeof r.nextAttemptAt === 'number') && Array.isArray(r.attempts) &&
    typeof r.payload === 'object' && r.payload !== null;
  if (!ok) return null;
  return {
    id: r.id as string,
    url: r.url as string,
    secret: r.secret as string,
    event: r.event as DeliveryRecord['event'],
    state: r.state as DeliveryState,
    retry: r.retry !== false,
    createdAt: r.createdAt as number,
    nextAttemptAt: r.nextAttemptAt as number | null,
    round: Number.isSafeInteger(r.round) ? (r.round as number) : 0,
    attempts: r.attempts as DeliveryRecord['attempts'],
    payload: JSON.stringify(r.payload),
  };
}

/** What an outbox file holds: its delivery rows as parsed, and whether it was torn (and salvaged). */
export interface OutboxRows {
  rows: Record<string, unknown>[];
  torn: boolean;
}

/**
 * Parses an outbox file's text. Text that is not JSON (a torn or truncated file) is salvaged: every
 * complete delivery in it is kept. JSON of another shape is an error, and the file is left alone.
 */
export function parseOutbox(text: string, file: string): OutboxRows {
  let data: { version?: unknown; deliveries?: unknown } | null;
  try {
    data = JSON.parse(text) as typeof data;
  } catch {
    return { rows: salvageRows(text), torn: true };
  }
  if (data?.version !== 1 || !Array.isArray(data.deliveries)) throw new Error(`${file} is not a cliphook outbox file (expected version 1).`);
  for (const row of data.deliveries as unknown[]) {
    if (!toRecord(row)) throw new Error(`${file} holds a malformed delivery: ${JSON.stringify(row).slice(0, 120)}`);
  }
  return { rows: data.deliveries as Record<string, unknown>[], torn: false };
}

/**
 * The complete deliveries of a torn outbox: each `{…}` directly inside the `deliveries` array that
 * parses and is a delivery, whatever the file's layout; a delivery cut short is lost.
 */
export function salvageRows(text: string): Record<string, unknown>[] {
  const key = text.indexOf('"deliveries"');
  const open = key < 0 ? -1 : text.indexOf('[', key);
  const rows: Record<string, unknown>[] = [];
  if (open < 0) return rows;
  let depth = 0;
  let from = -1;
  let inString = false;
  let escaped = false;
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') {
      if (depth++ === 0) from = i;
    } else if (c === '}' && depth > 0 && --depth === 0) {
      try {
        const row = JSON.parse(text.slice(from, i + 1)) as unknown;
        if (toRecord(row)) rows.push(row as Record<string, unknown>);
      } catch {
        // Not a whole delivery: lost with the tear.
      }
    } else if (c === ']' && depth === 0) break;
  }
  return rows;
}

/**
 * Repairs a torn outbox file, for both outboxes, without ever leaving `file` missing: the torn `text` is
 * first copied aside as `<file>.torn-<stamp>` (a new file, never over another one, private like the
 * outbox), then `write` replaces the torn file, atomically, with what was recovered from it. If either
 * step fails this throws with the torn file still at `file`, so the next run recovers the same
 * deliveries; a copy that is not needed then is removed. Resolves with the copy's path once the repaired
 * file is written: only then may a warning say the deliveries were recovered.
 */
export async function repairTornFile(file: string, text: string, stamp: number, write: () => Promise<void>): Promise<string> {
  const aside = `${file}.torn-${stamp}`;
  try {
    await writeFile(aside, text, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    // A copy cut short (a full disk) is no copy; a file that was there already is not this one to remove.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') await rm(aside, { force: true }).catch(() => undefined);
    throw error;
  }
  try {
    await write();
  } catch (error) {
    // The torn file is normally still in place (the write renames over it only once whole), and then the
    // copy is redundant; if the rename did happen (a failed flush after it), the copy is the torn text's only one.
    if ((await readFile(file, 'utf8').catch(() => null)) === text) await rm(aside, { force: true }).catch(() => undefined);
    throw error;
  }
  return aside;
}
