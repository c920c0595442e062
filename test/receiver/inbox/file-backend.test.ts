// The file inbox writes a run's `running` line (with its attempt) before the claim resolves, so a handler that
// ends the process has its run counted; the next start runs it again, or makes it dead after its last run.
import { readFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
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
  /** What a next start would see had the process died now: a copy of the files, opened by another back end. */
  const afterCrash = async (maxAttempts = 3) => {
    const copy = tmp.file('copy.json');
    await copyFile(`${file}.journal`, `${copy}.journal`);
    const other = new FileInboxBackend({ file: copy, keepDone: 100, keepDoneMs: 60_000, maxAttempts, clock });
    await other.open();
    cleanups.push(() => other.close());
    return other;
  };
  /** The journal's lines as they are at this instant, before any other write can start. */
  const linesNow = () => readFileSync(`${file}.journal`, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { backend, linesNow, afterCrash };
}

describe('FileInboxBackend journal lines', () => {
  it('a claim resolves once the run is on disk: a process ended right after still counts it', async () => {
    const { backend, linesNow, afterCrash } = await open();
    await backend.add(record('a'), 10);
    const [a] = await backend.claim(T0, T0 + 1000, 'w', 10);
    // No other write, no settle: exactly what a handler calling process.exit() at once leaves.
    expect(linesNow()).toContainEqual({ id: 'a', state: 'running', attempts: 1, nextAttemptAt: null });
    expect(a).toMatchObject({ id: 'a', attempts: 1 });
    expect(await (await afterCrash()).get('a')).toMatchObject({ state: 'pending', attempts: 1 });
  });

  it('a record found running after its last run is dead at open, with the reason, and runs no more', async () => {
    const { backend, afterCrash } = await open();
    await backend.add(record('a'), 10);
    await backend.add(record('b'), 10);
    await backend.claim(T0, T0 + 1000, 'w', 1);
    const next = await afterCrash(1);
    expect(await next.get('a')).toMatchObject({ state: 'dead', attempts: 1, finishedAt: T0, lastError: expect.stringContaining('The process ended while the inbox was running it (run 1 of 1)') });
    expect((await next.claim(T0, T0 + 1000, 'w', 10)).map((r) => r.id)).toEqual(['b']);
  });

  it('a run settled before the next write keeps its attempt: the next start sees attempts 1, pending later', async () => {
    const { backend, afterCrash } = await open();
    await backend.add(record('a'), 10);
    const [a] = await backend.claim(T0, T0 + 1000, 'w', 10);
    await backend.settle({ ...a!, state: 'pending', nextAttemptAt: T0 + 500, lastError: 'boom' }, 'w', T0);
    expect(await (await afterCrash()).get('a')).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: T0 + 500, lastError: 'boom' });
  });
});
