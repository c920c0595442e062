// The file inbox's reading: every record and change is checked, a damaged file is refused with the
// operator's message and left as it was, and the older single-document format is read as a stream.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FileInboxBackend } from '../../../src/receiver/inbox/file-backend.js';
import { INBOX_FILE_HEADER, legacyRecords } from '../../../src/receiver/inbox/inbox-file-format.js';
import { newRecord, type InboxRecord } from '../../../src/receiver/inbox/record.js';
import { tempDir } from '../../helpers/webhooks.js';

const T0 = 1_700_000_000_000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const record = (id: string, extra: Partial<InboxRecord> = {}): InboxRecord => ({ ...newRecord(id, 'video.completed', `{"id":"${id}"}`, [`e:${id}`], 'webhook', T0), ...extra });

async function files() {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const file = tmp.file('inbox.json');
  const open = async (options: { maxAttempts?: number } = {}) => {
    const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 86_400_000, clock: () => T0, ...options });
    await backend.open();
    cleanups.push(() => backend.close());
    return backend;
  };
  return { file, open };
}

/** Opening refuses with the operator's one line, naming the file and the damage, and changes nothing on disk. */
async function expectRefused(file: string, open: () => Promise<unknown>, why: string | RegExp) {
  const before = [await readFile(file, 'utf8').catch(() => null), await readFile(`${file}.journal`, 'utf8').catch(() => null)];
  const error = (await open().then(
    () => null,
    (caught: unknown) => caught,
  )) as Error | null;
  expect(error).toBeInstanceOf(Error);
  expect(error!.message).not.toContain('\n');
  expect(error!.message).toMatch(new RegExp(`^The receiver inbox ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `));
  expect(error!.message).toMatch(why);
  expect(error!.message).toContain('It holds events already acknowledged');
  expect(error!.message).toContain('docs/inbox.md');
  expect([await readFile(file, 'utf8').catch(() => null), await readFile(`${file}.journal`, 'utf8').catch(() => null)]).toEqual(before);
  expect(existsSync(`${file}.lock`)).toBe(false);
}

describe('a damaged file inbox is refused, never half read', () => {
  it('a garbage line in the middle of the journal', async () => {
    const { file, open } = await files();
    await writeFile(`${file}.journal`, [JSON.stringify(record('a')), 'garbage{', JSON.stringify(record('b')), ''].join('\n'));
    await expectRefused(file, open, /has a line that is not valid JSON in .*inbox\.json\.journal \(line 2\)/);
  });

  it('a snapshot of null, records [null], a record without a body, an unknown state', async () => {
    const { file, open } = await files();
    await writeFile(file, 'null');
    await expectRefused(file, open, /is not a cliphook inbox file/);
    await writeFile(file, '{"version":1,"records":[null]}');
    await expectRefused(file, open, /has a damaged record \(records\[0\]: expected a record object, got null\)/);
    const { body: _body, ...bodiless } = record('a');
    await writeFile(file, JSON.stringify({ version: 1, records: [bodiless] }));
    await expectRefused(file, open, /record "a" has no `body`/);
    await writeFile(file, JSON.stringify({ version: 1, records: [{ ...record('a'), state: 'odd' }] }));
    await expectRefused(file, open, /record "a": `state` is "odd", expected one of pending, running, dead, done/);
    // The same in this format's snapshot lines, and in the journal.
    await writeFile(file, `${INBOX_FILE_HEADER}\n${JSON.stringify({ ...record('a'), attempts: -1 })}\n`);
    await expectRefused(file, open, /has a damaged record at line 2 \(record "a": `attempts` is -1/);
    await writeFile(file, `${INBOX_FILE_HEADER}\n${JSON.stringify(record('a'))}\n`);
    await writeFile(`${file}.journal`, `${JSON.stringify({ id: 'a', state: 'gone' })}\n${JSON.stringify({ id: 'a', state: 'done' })}\n`);
    await expectRefused(file, open, /has a damaged line in .*journal \(line 1: record "a": `state` is "gone"/);
  });

  it('an empty snapshot or a truncated one', async () => {
    const { file, open } = await files();
    await writeFile(file, '');
    await expectRefused(file, open, /is empty/);
    await writeFile(file, `${INBOX_FILE_HEADER}\n${JSON.stringify(record('a')).slice(0, 30)}`);
    await expectRefused(file, open, /has a line that is not valid JSON \(line 2\)/);
  });

  it('tolerates a torn last journal line, and a torn line a later line repeats in full (a write retried after a full disk)', async () => {
    const { file, open } = await files();
    const a = JSON.stringify(record('a'));
    const done = JSON.stringify({ id: 'a', state: 'done', nextAttemptAt: null, finishedAt: T0, lastError: null });
    await writeFile(`${file}.journal`, `${a.slice(0, 25)}\n${a}\n${done}\n${JSON.stringify(record('b')).slice(0, 20)}`);
    const backend = await open();
    expect(await backend.get('a')).toMatchObject({ state: 'done' });
    expect(await backend.get('b')).toBeUndefined();
    expect(await backend.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
  });
  it('rewrites a journal whose last line was cut short, so events added after it still open at the next start', async () => {
    const { file, open } = await files();
    const a = JSON.stringify(record('a'));
    await writeFile(`${file}.journal`, `${a}\n${JSON.stringify(record('b')).slice(0, 20)}`);
    const first = await open();
    expect(await first.add(record('c'), 100)).toBe('added');
    await first.close();
    // The cut line is gone from the files, not left in the middle of the journal.
    expect(`${await readFile(file, 'utf8')}${await readFile(`${file}.journal`, 'utf8').catch(() => '')}`).not.toContain(JSON.stringify(record('b')).slice(0, 20) + '\n');
    const second = await open();
    expect((await second.list(undefined, 10)).map((r) => r.id).sort()).toEqual(['a', 'c']);
  });
});

describe('the older format', () => {
  const doc = JSON.stringify({ version: 1, records: [record('a'), record('b,"]}{\\', { lastError: 'x"]},{' }), record('c', { keys: [] })] });

  it('reads the elements of records at any split of the text into chunks', async () => {
    const whole = await collect([doc]);
    expect(whole.map((r) => (r as InboxRecord).id)).toEqual(['a', 'b,"]}{\\', 'c']);
    for (let at = 1; at < doc.length; at++) expect(await collect([doc.slice(0, at), doc.slice(at)])).toEqual(whole);
    expect(await collect([...doc])).toEqual(whole);
  });

  it('is rewritten in this format at open, with the journal applied, and reads the same after', async () => {
    const { file, open } = await files();
    await writeFile(file, doc);
    await writeFile(`${file}.journal`, `${JSON.stringify({ id: 'a', state: 'dead', finishedAt: T0, nextAttemptAt: null, lastError: 'bug' })}\n`);
    const first = await open();
    expect(await first.stats()).toEqual({ pending: 2, running: 0, dead: 1, done: 0 });
    expect((await readFile(file, 'utf8')).split('\n')[0]).toBe(INBOX_FILE_HEADER);
    expect(await readFile(`${file}.journal`, 'utf8')).toBe('');
    await first.close();
    cleanups.pop();
    const again = await open();
    expect(await again.get('a')).toMatchObject({ state: 'dead', lastError: 'bug' });
    expect(await again.get('b,"]}{\\')).toMatchObject({ state: 'pending', lastError: 'x"]},{' });
  });
});

async function collect(chunks: string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  async function* feed() {
    yield* chunks;
  }
  for await (const value of legacyRecords(feed())) out.push(value);
  return out;
}
