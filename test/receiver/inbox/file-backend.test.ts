// Issue 30 item 4: the file inbox writes a run's `running` line only when a journal write starts while the run
// is still going; a run that settles first writes one line carrying its attempt. A crash counts the attempt
// exactly as before: what reaches the file is what a write took.
import { copyFile, readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FileInboxBackend } from '../../../src/receiver/inbox/file-backend.js';
import { newRecord } from '../../../src/receiver/inbox/record.js';
import { tempDir } from '../../helpers/webhooks.js';

const T0 = 1_700_000_000_000;
const clock = () => T0;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const record = (id: string) => newRecord(id, 'video.completed', `{"id":"${id}"}`, [`e:${id}`], 'webhook', T0);

async function open() {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const file = tmp.file('inbox.json');
  const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 60_000, clock });
  await backend.open();
  cleanups.push(() => backend.close());
  const lines = async () => (await readFile(`${file}.journal`, 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  /** What a next start would see had the process died now: a copy of the files, opened by another back end. */
  const afterCrash = async () => {
    const copy = tmp.file('copy.json');
    await copyFile(`${file}.journal`, `${copy}.journal`);
    const other = new FileInboxBackend({ file: copy, keepDone: 100, keepDoneMs: 60_000, clock });
    await other.open();
    cleanups.push(() => other.close());
    return other;
  };
  return { backend, lines, afterCrash };
}

describe('FileInboxBackend journal lines', () => {
  it('a run that settles before the next write leaves one line with its attempt, no running line', async () => {
    const { backend, lines } = await open();
    await backend.add(record('a'), 10);
    const [a] = await backend.claim(T0, T0 + 1000, 'w', 10);
    await backend.settle({ ...a!, state: 'done', finishedAt: T0, lastError: null }, 'w', T0);
    expect(await lines()).toEqual([
      expect.objectContaining({ id: 'a', state: 'pending', body: '{"id":"a"}' }),
      { id: 'a', state: 'done', attempts: 1, nextAttemptAt: null, finishedAt: T0, lastError: null },
    ]);
  });

  it('a run still going when a write starts has its running line in that write, so a crash counts the attempt', async () => {
    const { backend, lines, afterCrash } = await open();
    await backend.add(record('a'), 10);
    await backend.claim(T0, T0 + 1000, 'w', 10);
    // Another event's write: the run of 'a' has not settled.
    await backend.add(record('b'), 10);
    expect(await lines()).toContainEqual({ id: 'a', state: 'running', attempts: 1, nextAttemptAt: null });
    const next = await afterCrash();
    expect(await next.get('a')).toMatchObject({ state: 'pending', attempts: 1 });
  });

  it('a retry settled before the write carries the attempt too: the next start sees attempts 1, pending later', async () => {
    const { backend, lines, afterCrash } = await open();
    await backend.add(record('a'), 10);
    const [a] = await backend.claim(T0, T0 + 1000, 'w', 10);
    await backend.settle({ ...a!, state: 'pending', nextAttemptAt: T0 + 500, lastError: 'boom' }, 'w', T0);
    expect((await lines()).filter((line) => line.state === 'running')).toEqual([]);
    expect(await (await afterCrash()).get('a')).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: T0 + 500, lastError: 'boom' });
  });
});
