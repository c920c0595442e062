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
