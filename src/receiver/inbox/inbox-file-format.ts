// The file inbox's format: a snapshot of lines (a header, then one record per line) and a journal of
// changes, one per line; each record read is checked before it is believed. Also the reader of the older
// single-document format (`{"version":1,"records":[…]}`), streamed so that no file needs one string.
import { INBOX_STATES, type InboxRecord, type InboxSource } from './record.js';

/** The first line of a snapshot in this format. */
export const INBOX_FILE_HEADER = '{"cliphook":"inbox","version":2}';

/** A journal line: a whole record (added, replayed), a change to one (`{ id, state, … }`), or `{ id, purged: true }`. */
export type InboxEntry = Partial<InboxRecord> & { id: string; purged?: true };

const SOURCES: readonly InboxSource[] = ['webhook', 'reconcile', 'replay'];

const isTime = (value: unknown) => typeof value === 'number' && Number.isFinite(value);

/** What is wrong with one field's value, or `null` when it is right (unknown fields are let through). */
function fieldProblem(key: string, value: unknown): string | null {
  switch (key) {
    case 'id':
    case 'deliveryId':
      return typeof value === 'string' && value !== '' ? null : 'a non-empty string';
    case 'name':
    case 'body':
      return typeof value === 'string' ? null : 'a string';
    case 'keys':
      return Array.isArray(value) && value.every((key) => typeof key === 'string') ? null : 'an array of strings';
    case 'source':
      return SOURCES.includes(value as InboxSource) ? null : `one of ${SOURCES.join(', ')}`;
    case 'state':
      return INBOX_STATES.includes(value as InboxRecord['state']) ? null : `one of ${INBOX_STATES.join(', ')}`;
    case 'attempts':
      return Number.isSafeInteger(value) && (value as number) >= 0 ? null : 'a non-negative integer';
    case 'receivedAt':
      return isTime(value) ? null : 'a time in milliseconds';
    case 'nextAttemptAt':
    case 'finishedAt':
      return value === null || isTime(value) ? null : 'a time in milliseconds or null';
    case 'lastError':
      return value === null || typeof value === 'string' ? null : 'a string or null';
    case 'purged':
      return value === true ? null : 'true';
    default:
      return null;
  }
}

const RECORD_FIELDS = ['id', 'name', 'body', 'keys', 'source', 'state', 'attempts', 'receivedAt', 'nextAttemptAt', 'finishedAt', 'lastError'] as const;

/** Why `value` is not a whole inbox record, or `null` when it is one. */
export function recordProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `expected a record object, got ${JSON.stringify(value)}`;
  const record = value as Record<string, unknown>;
  for (const field of RECORD_FIELDS) {
    if (!(field in record)) return `${label(record)} has no \`${field}\``;
    const problem = fieldProblem(field, record[field]);
    if (problem) return `${label(record)}: \`${field}\` is ${JSON.stringify(record[field])}, expected ${problem}`;
  }
  // Records written before the delivery id was kept beside the event key have none; when present it is checked.
  const deliveryProblem = 'deliveryId' in record ? fieldProblem('deliveryId', record.deliveryId) : null;
  if (deliveryProblem) return `${label(record)}: \`deliveryId\` is ${JSON.stringify(record.deliveryId)}, expected ${deliveryProblem}`;
  return null;
}

/** Why `value` is not a journal entry (a whole record, a change to one, or a purge), or `null`. */
export function entryProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `expected an object, got ${JSON.stringify(value)}`;
  const entry = value as Record<string, unknown>;
  if ('body' in entry) return recordProblem(entry);
  const idProblem = fieldProblem('id', entry.id);
  if (idProblem) return `\`id\` is ${JSON.stringify(entry.id)}, expected ${idProblem}`;
  for (const [key, field] of Object.entries(entry)) {
    const problem = fieldProblem(key, field);
    if (problem) return `${label(entry)}: \`${key}\` is ${JSON.stringify(field)}, expected ${problem}`;
  }
  return null;
}

function label(record: Record<string, unknown>): string {
  return typeof record.id === 'string' ? `record ${JSON.stringify(record.id)}` : 'a record';
}

/** The older format's document is not what it should be; `syntax` when it is not JSON at all. */
export class LegacyInboxError extends Error {
  readonly syntax: boolean;
  constructor(message: string, syntax: boolean) {
    super(message);
    this.syntax = syntax;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;

/**
 * The elements of the `records` array of a `{"version":1,"records":[…]}` document, each parsed as it
 * is read: the document arrives in chunks and only one element at a time is held as a string, so a
 * document larger than the largest string still opens. The rest of the document (its "shell") is kept
 * and checked at the end; a document that is not JSON, or of another shape, throws `LegacyInboxError`.
 */
export async function* legacyRecords(chunks: AsyncIterable<string>): AsyncGenerator<unknown> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** Inside the top object's `records` array: its elements are cut out of the shell. */
  let inRecords = false;
  let shell = '';
  let element: string[] = [];
  /** The last string closed at depth 1, and the key it became when a colon followed. */
  let lastString = '';
  let lastKey = '';
  /** Where a string at depth 1 began in this chunk (-1: none), and its text from earlier chunks. */
  let stringStart = -1;
  let stringParts: string[] = [];
  const parse = (text: string) => {
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new LegacyInboxError((error as Error).message, true);
    }
  };
  for await (const chunk of chunks) {
    // Where the current run of shell or element text began in this chunk.
    let from = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          if (stringStart >= 0) {
            stringParts.push(chunk.slice(stringStart, i + 1));
            lastString = stringParts.join('');
            stringParts = [];
            stringStart = -1;
          }
        }
        continue;
      }
      if (c === QUOTE) {
        inString = true;
        stringStart = depth === 1 ? i : -1;
        continue;
      }
      if (depth === 1 && c === COLON) lastKey = lastString;
      if (c === 0x7b || c === 0x5b) {
        depth++;
        if (depth === 2 && c === 0x5b && lastKey === '"records"') {
          inRecords = true;
          shell += chunk.slice(from, i + 1);
          from = i + 1;
        }
      } else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (inRecords && depth === 1) {
          element.push(chunk.slice(from, i));
          const text = element.join('').trim();
          element = [];
          if (text !== '') yield parse(text);
          inRecords = false;
          from = i;
        }
      } else if (inRecords && depth === 2 && c === COMMA) {
        element.push(chunk.slice(from, i));
        const text = element.join('').trim();
        element = [];
        yield parse(text);
        from = i + 1;
      }
    }
    if (inRecords) element.push(chunk.slice(from));
    else shell += chunk.slice(from);
    // A string at depth 1 split across chunks goes on from the start of the next one.
    if (inString && stringStart >= 0) {
      stringParts.push(chunk.slice(stringStart));
      stringStart = 0;
    }
  }
  const document = parse(shell) as { version?: unknown; records?: unknown } | null;
  if (document === null || typeof document !== 'object' || document.version !== 1 || !Array.isArray(document.records)) {
    throw new LegacyInboxError('is not a cliphook inbox file (expected {"version":1,"records":[…]} or a file of lines)', false);
  }
}
