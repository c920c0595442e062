// The inspector log writes the lines that come while a write is on its way in one append (issue 23).
import { readFile } from 'node:fs/promises';
import * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { testdir } from '../relay/fixtures.js';
import { exchangeFixture } from './fixtures.js';

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, appendFile: vi.fn(actual.appendFile) };
});

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the inspector log under a burst', () => {
  it('appends 300 exchanges recorded in one turn with one write, every line kept, in order', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const log = join(dir, 'listen.events.jsonl');
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log });
    const appendFile = vi.mocked(fsPromises.appendFile);
    appendFile.mockClear();
    for (let n = 1; n <= 300; n++) recorder.record(exchangeFixture(n));
    await recorder.close();
    expect(appendFile).toHaveBeenCalledTimes(1);
    const ids = (await readFile(log, 'utf8')).split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: number }).id);
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));

    // A later burst is a later write; the file keeps both.
    const again = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log });
    for (let n = 301; n <= 310; n++) again.record(exchangeFixture(n));
    await again.close();
    expect(appendFile).toHaveBeenCalledTimes(2);
    expect((await readFile(log, 'utf8')).split('\n').filter(Boolean)).toHaveLength(310);
  });
});
