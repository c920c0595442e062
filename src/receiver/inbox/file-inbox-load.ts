// Reads a file inbox (its snapshot and journal) as streams of text, checking every record and change:
// a damaged file is refused with the operator's one-line message, and read, never written.
import { createReadStream, writeSync } from 'node:fs';
import { nodeLineFileIo, type LineFileIo } from '../../store/line-file-io.js';
import { entryProblem, INBOX_FILE_HEADER, LegacyInboxError, legacyRecords, recordProblem, type InboxEntry } from './inbox-file-format.js';
import type { InboxRecord } from './record.js';

/** The file operations of a file inbox: a `LineJournal`'s, and its files' text as a stream of pieces. */
export interface InboxFileIo extends LineFileIo {
  /** The file's text in pieces (UTF-8 decoded), read as a stream: a file may be larger than a string can be. */
  chunks(file: string): AsyncIterable<string>;
}

/** `node:fs`. */
export const nodeInboxFileIo: InboxFileIo = {
  ...nodeLineFileIo,
  // A group commit's lines are a few kilobytes to the page cache, written in microseconds: a hop through
  // libuv's thread pool instead costs two cross-thread wake-ups per batch (as JournalFile found).
  async append(handle, pieces) {
    nodeInboxFileIo.appendSync!(handle, pieces);
  },
  // A claim writes its `running` lines this way before its handler starts (LineJournal.writeNow): a
  // commit would hold every handler start for a turn of the event loop or more under load.
  appendSync(handle, pieces) {
    for (const piece of pieces) {
      let rest = piece;
      // A full disk often takes part of a buffer, then throws on the next call; loop over short writes.
      while (rest.length > 0) {
        const written = writeSync(handle.fd, rest);
        if (written <= 0) throw new Error('The journal took no bytes.');
        rest = rest.subarray(written);
      }
    }
  },
  // A generator, so the file is opened only when iterated.
  async *chunks(file) {
    yield* createReadStream(file, { encoding: 'utf8', highWaterMark: 64 * 1024 }) as AsyncIterable<string>;
  },
};

/** A file inbox that cannot be believed: `why` completes "The receiver inbox <file> …". */
export class UnreadableInboxError extends Error {
  readonly why: string;
  constructor(why: string, options?: ErrorOptions) {
    super(why, options);
    this.why = why;
  }
}

export interface LoadedInbox {
  records: Map<string, InboxRecord>;
  /** The snapshot was of the older single-document format: the next write should rewrite it. */
  legacy: boolean;
  /**
   * The journal holds a line a crash or a full disk cut short (tolerated where it was): the next write
   * should rewrite the files, since lines appended after it would leave it in the middle.
   */
  torn: boolean;
}

/** The lines of a stream of text; the last one may lack its newline. */
async function* linesOf(chunks: AsyncIterable<string>): AsyncGenerator<string> {
  let rest = '';
  for await (const chunk of chunks) {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
      yield rest + chunk.slice(start, nl);
      rest = '';
      start = nl + 1;
    }
    rest += chunk.slice(start);
  }
  if (rest !== '') yield rest;
}

/** The stream with its first pieces read ahead until `length` characters are known (or it ended). */
async function peek(chunks: AsyncIterable<string>, length: number): Promise<{ head: string; all: AsyncIterable<string> }> {
  const iterator = chunks[Symbol.asyncIterator]();
  const seen: string[] = [];
  let known = 0;
  let done = false;
  while (known < length) {
    const next = await iterator.next();
    if (next.done) {
      done = true;
      break;
    }
    seen.push(next.value);
    known += next.value.length;
  }
  async function* all(): AsyncGenerator<string> {
    yield* seen;
    if (done) return;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  return { head: seen.join('').slice(0, length), all: all() };
}

function parseLine(text: string): { value: unknown } | null {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return null;
  }
}

/** Reads the snapshot (either format) and replays the journal over it. Throws `UnreadableInboxError`. */
export async function loadInboxFiles(io: InboxFileIo, file: string, journal: string): Promise<LoadedInbox> {
  const records = new Map<string, InboxRecord>();
  let legacy = false;
  const size = await io.size(file);
  if (size === 0) throw new UnreadableInboxError('is empty (expected a cliphook inbox file)');
  if (size > 0) {
    const { head, all } = await peek(io.chunks(file), INBOX_FILE_HEADER.length + 1);
    if (head.startsWith(INBOX_FILE_HEADER) && (head.length === INBOX_FILE_HEADER.length || /^\r?\n/.test(head.slice(INBOX_FILE_HEADER.length)))) {
      let number = 0;
      for await (const text of linesOf(all)) {
        if (++number === 1 || text.trim() === '') continue;
        const parsed = parseLine(text);
        if (!parsed) throw new UnreadableInboxError(`has a line that is not valid JSON (line ${number})`);
        const problem = recordProblem(parsed.value);
        if (problem) throw new UnreadableInboxError(`has a damaged record at line ${number} (${problem})`);
        const record = parsed.value as InboxRecord;
        records.set(record.id, record);
      }
    } else {
      legacy = true;
      let index = 0;
      try {
        for await (const value of legacyRecords(all)) {
          const problem = recordProblem(value);
          if (problem) throw new UnreadableInboxError(`has a damaged record (records[${index}]: ${problem})`);
          const record = value as InboxRecord;
          records.set(record.id, record);
          index++;
        }
      } catch (error) {
        if (!(error instanceof LegacyInboxError)) throw error;
        throw new UnreadableInboxError(error.syntax ? `is not valid JSON (${error.message})` : error.message, { cause: error });
      }
    }
  }
  const torn = (await io.size(journal)) > 0 && (await readJournal(io, journal, (entry) => apply(records, entry)));
  return { records, legacy, torn };
}

/**
 * The journal's entries, checked. A line that is not JSON is a write a crash or a full disk cut short:
 * tolerated as the last line, or when a later line starts with it (the failed write, made again in
 * full); anywhere else it is damage, and refused. Answers whether a line was cut short.
 */
async function readJournal(io: InboxFileIo, journal: string, onEntry: (entry: InboxEntry) => void): Promise<boolean> {
  let cutShort = false;
  /** Lines cut short, waiting for the line that repeats them in full. */
  let torn: Array<{ number: number; text: string }> = [];
  let number = 0;
  let last = 0;
  for await (const text of linesOf(io.chunks(journal))) {
    number++;
    if (text.trim() === '') continue;
    last = number;
    const parsed = parseLine(text);
    if (!parsed) {
      torn.push({ number, text });
      cutShort = true;
      continue;
    }
    if (torn.length > 0) torn = torn.filter((cut) => !text.startsWith(cut.text));
    const problem = entryProblem(parsed.value);
    if (problem) throw new UnreadableInboxError(`has a damaged line in ${journal} (line ${number}: ${problem})`);
    onEntry(parsed.value as InboxEntry);
  }
  const damaged = torn.find((cut) => cut.number !== last);
  if (damaged) throw new UnreadableInboxError(`has a line that is not valid JSON in ${journal} (line ${damaged.number})`);
  return cutShort;
}

function apply(records: Map<string, InboxRecord>, entry: InboxEntry): void {
  if (entry.purged) records.delete(entry.id);
  else if (typeof entry.body === 'string') records.set(entry.id, entry as InboxRecord);
  else {
    // A change to a record dropped since (trimmed, purged): nothing to change.
    const found = records.get(entry.id);
    if (found) records.set(entry.id, { ...found, ...entry });
  }
}

/**
 * The one line an operator sees (in every 503's onError, and from `cliphook inbox`) when the inbox cannot
 * be read: the file, why the receiver refuses, and what to do.
 */
export function unreadable(file: string, why: string): string {
  return (
    `The receiver inbox ${file} ${why}. It holds events already acknowledged, so the receiver answers 503 until it opens. ` +
    `Stop the app, copy ${file} and ${file}.journal, then repair or remove the damaged line (each line is one JSON record or change), ` +
    `or move ${file} aside to start from the journal alone (the pending and dead events only the file held are then lost): ` +
    `see "A corrupt inbox file" in cliphook's docs/inbox.md.`
  );
}
