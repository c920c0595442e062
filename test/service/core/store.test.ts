import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileLockedError } from '../../../src/protocol/errors.js';
import { ServiceStore } from '../../../src/service/core/store.js';

interface Video {
  id: number;
  status: string;
}
interface Key {
  id: string;
  accountId: number;
}
type Tables = { video: Video; key: Key };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cliphook-state-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const open = (file: string | false = join(dir, 'service.json'), compactAfter?: number) =>
  ServiceStore.open<Tables>({ file, tables: ['video', 'key'], ...(compactAfter ? { compactAfter } : {}) });

describe('ServiceStore', () => {
  it('keeps every committed change across a restart, and ids are never reused after a removal', async () => {
    const store = await open();
    const videos = store.table('video');
    const a = videos.put({ id: store.nextId('video'), status: 'pending' });
    videos.put({ id: store.nextId('video'), status: 'pending' });
    a.status = 'done';
    videos.put(a);
    videos.remove(2);
    store.table('key').put({ id: 'key_1', accountId: 1 });
    await store.commit();
    await store.close();

    const again = await open();
    expect([...again.table('video').values()]).toEqual([{ id: 1, status: 'done' }]);
    expect(again.table('key').get('key_1')).toEqual({ id: 'key_1', accountId: 1 });
    expect(again.nextId('video')).toBe(3);
    await again.close();
  });

  it('recovers what a crash left in the journal (no close), skipping a torn last line', async () => {
    const file = join(dir, 'service.json');
    const store = await open(file);
    store.table('video').put({ id: store.nextId('video'), status: 'pending' });
    await store.commit();
    store.table('video').put({ id: store.nextId('video'), status: 'generating' });
    await store.commit();
    // What a crash leaves: the files as they are now, with no snapshot written at close.
    const crashed = join(dir, 'crashed.json');
    for (const suffix of ['', '.journal']) {
      try {
        appendFileSync(`${crashed}${suffix}`, readFileSync(`${file}${suffix}`));
      } catch {
        // no snapshot yet
      }
    }
    appendFileSync(`${crashed}.journal`, '["video",3,{"id":3,"sta');
    await store.close();

    const again = await open(crashed);
    expect([...again.table('video').values()].map((v) => v.status)).toEqual(['pending', 'generating']);
    expect(again.badLines).toBe(1);
    expect(again.nextId('video')).toBe(3);
    await again.close();
  });

  it('compacts into a snapshot once the journal is long, and loads it', async () => {
    const file = join(dir, 'service.json');
    const store = await open(file, 5);
    for (let i = 0; i < 20; i++) {
      store.table('video').put({ id: store.nextId('video'), status: 'pending' });
      await store.commit();
    }
    const snapshot = JSON.parse(readFileSync(file, 'utf8')) as { tables: { video: Video[] } };
    expect(snapshot.tables.video.length).toBeGreaterThanOrEqual(5);
    await store.close();
    const again = await open(file);
    expect(again.table('video').size).toBe(20);
    await again.close();
  });

  it('compacts from each row as last put: no row is serialised again, the text is what a fresh snapshot of them is (issue 31)', async () => {
    const file = join(dir, 'service.json');
    const store = await open(file, 4);
    let serialised = 0;
    // Counts how often a row is turned into JSON (non-enumerable: not part of the row).
    const counted = <R extends object>(row: R): R =>
      Object.defineProperty(row, 'toJSON', { value: () => (serialised++, { ...row }), enumerable: false });
    const videos = store.table('video');
    for (let i = 0; i < 3; i++) videos.put(counted({ id: store.nextId('video'), status: 'pending' }));
    store.table('key').put(counted({ id: 'key_1', accountId: 1 }));
    videos.remove(2);
    const first = videos.get(1)!;
    first.status = 'done';
    videos.put(first);
    await store.commit();
    const puts = serialised;
    // More lines than rows: the next commit compacts.
    for (let i = 0; i < 4; i++) videos.put(videos.get(3)!);
    await store.commit();
    expect(serialised - puts).toBe(4);
    const expected = { version: 1, seq: { video: 4 }, tables: { video: [{ id: 1, status: 'done' }, { id: 3, status: 'pending' }], key: [{ id: 'key_1', accountId: 1 }] } };
    expect(readFileSync(file, 'utf8')).toBe(JSON.stringify(expected));
    expect(readFileSync(`${file}.journal`, 'utf8')).toBe('');
    await store.close();
    const again = await open(file);
    expect([...again.table('video').values()]).toEqual(expected.tables.video);
    await again.close();
  });

  it('a compaction mid-run writes what was put; close writes the rows as they are (a counter changed in place)', async () => {
    const file = join(dir, 'service.json');
    const store = await open(file, 2);
    const videos = store.table('video');
    const row = videos.put({ id: store.nextId('video'), status: 'pending' });
    await store.commit();
    // Changed in place, never put: not journalled, so a compaction (the journal's equal) leaves it out.
    row.status = 'changed in place';
    videos.put({ id: store.nextId('video'), status: 'pending' });
    videos.put({ id: store.nextId('video'), status: 'pending' });
    await store.commit();
    const compacted = JSON.parse(readFileSync(file, 'utf8')) as { tables: { video: Video[] } };
    expect(compacted.tables.video.map((video) => video.status)).toEqual(['pending', 'pending', 'pending']);
    await store.close();
    const closed = JSON.parse(readFileSync(file, 'utf8')) as { tables: { video: Video[] } };
    expect(closed.tables.video.map((video) => video.status)).toEqual(['changed in place', 'pending', 'pending']);
  });

  it('locks the file to one store', async () => {
    const store = await open();
    await expect(open()).rejects.toThrow(FileLockedError);
    await store.close();
    const next = await open();
    await next.close();
  });

  it('runs in memory without a file', async () => {
    const store = await open(false);
    store.table('video').put({ id: store.nextId('video'), status: 'pending' });
    await store.commit();
    expect(store.table('video').size).toBe(1);
    await store.close();
  });

  it('refuses a file that is not a service data file, and bad options', async () => {
    const file = join(dir, 'other.json');
    appendFileSync(file, JSON.stringify({ version: 2, something: [] }));
    await expect(open(file)).rejects.toThrow(/not a cliphook service data file/);
    // The lock was released with the failure.
    await expect(ServiceStore.open({ file: '', tables: ['video'] })).rejects.toThrow(TypeError);
    await expect(ServiceStore.open({ file: false, tables: [] })).rejects.toThrow(TypeError);
  });
});
