import { copyFile, mkdir, open, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileDeliveryStore, MemoryDeliveryStore, createReceiver } from '../../src/index.js';
import { tempDir } from '../helpers/webhooks.js';

let cleanup: () => Promise<void> = async () => {};
afterEach(() => cleanup());

/** Keys in the snapshot and the journal, as a restarted process would read them. */
async function keysOnDisk(file: string): Promise<string[]> {
  const read = (path: string) => readFile(path, 'utf8').catch(() => '');
  const snapshot = await read(file);
  const journal = await read(`${file}.journal`);
  // Snapshot rows are [key, at]; a journal line is [key, ..., at], one line per completed delivery.
  const rows: (string | number)[][] = [
    ...(snapshot ? (JSON.parse(snapshot) as { processed: [string, number][] }).processed : []),
    ...journal.split('\n').filter(Boolean).map((line) => JSON.parse(line) as (string | number)[]),
  ];
  return rows.flatMap((row) => row.slice(0, -1) as string[]);
}

/** What a crashed process leaves behind, copied to a new path for a "restarted" store to open. */
async function copyAsCrashed(file: string): Promise<string> {
  const crashed = `${file}.after-crash`;
  await copyFile(file, crashed).catch(() => undefined);
  await copyFile(`${file}.journal`, `${crashed}.journal`).catch(() => undefined);
  return crashed;
}

async function fileIn() {
  const tmp = await tempDir();
  cleanup = tmp.cleanup;
  return tmp.file('nested/deliveries.json');
}

describe('FileDeliveryStore', () => {
  it('a new instance on the same file still knows processed deliveries', async () => {
    const file = await fileIn();
    const first = new FileDeliveryStore({ file });
    for (let i = 0; i < 50; i++) {
      await first.claim([`d:${i}`, `e:${i}`], 1000, 'me');
      await first.complete([`d:${i}`, `e:${i}`]);
    }
    // No close(): each completion must already be on disk, as after a crash. The copy is what a crashed
    // process leaves behind; the new store opens it as the restarted process would.
    const crashed = await copyAsCrashed(file);
    const second = new FileDeliveryStore({ file: crashed });
    expect(await second.claim(['d:7', 'e:other'], 1000, 'me')).toBe('processed');
    expect(await second.claim(['d:new', 'e:49'], 1000, 'me')).toBe('processed');
    expect(await second.claim(['d:50', 'e:50'], 1000, 'me')).toBe('claimed');
  });

  it('group commit: 500 concurrent completions share a handful of writes, each answered after its mark is on disk', async () => {
    const file = await fileIn();
    const store = new FileDeliveryStore({ file });
    await Promise.all(Array.from({ length: 500 }, (_, i) => store.claim([`k${i}`], 1000, 'me')));
    await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        await store.complete([`k${i}`]);
        expect(await keysOnDisk(file)).toContain(`k${i}`);
      }),
    );
    expect(store.writes).toBeLessThanOrEqual(3);
    expect(store.writes).toBeGreaterThanOrEqual(1);
  });

  it('with fsync: true, a completion resolves only after the disk flushed the group commit holding it', async () => {
    const file = await fileIn();
    // FileHandle is not exported: any handle's prototype is its class's.
    await mkdir(dirname(file), { recursive: true });
    const probe = await open(`${file}.probe`, 'w');
    await probe.close();
    const datasync = vi.spyOn(Object.getPrototypeOf(probe) as { datasync(): Promise<void> }, 'datasync');
    try {
      const store = new FileDeliveryStore({ file, fsync: true });
      await Promise.all(Array.from({ length: 50 }, (_, i) => store.claim([`k${i}`], 1000, 'me')));
      await Promise.all(Array.from({ length: 50 }, (_, i) => store.complete([`k${i}`])));
      // One flush per group commit, not per completion.
      expect(datasync.mock.calls.length).toBeGreaterThanOrEqual(1);
      expect(datasync.mock.calls.length).toBe(store.writes);
      await store.close();
    } finally {
      datasync.mockRestore();
    }
  });

  it('forgets deliveries older than the retention, in memory and after a restart', async () => {
    const file = await fileIn();
    let now = 1_000_000;
    const store = new FileDeliveryStore({ file, retentionMs: 60_000, clock: () => now });
    for (const key of ['early', 'late']) {
      await store.claim([key], 1000, 'me');
      await store.complete([key]);
      now += 30_000;
    }
    now += 10_000; // early is 70 s old, late 40 s
    expect(await store.claim(['early'], 1000, 'me')).toBe('claimed');
    expect(await store.claim(['late'], 1000, 'me')).toBe('processed');
    const restarted = new FileDeliveryStore({ file: await copyAsCrashed(file), retentionMs: 60_000, clock: () => now });
    expect(await restarted.claim(['early'], 1000, 'me')).toBe('claimed');
    expect(await restarted.claim(['late'], 1000, 'me')).toBe('processed');
    now += 30_000;
    await store.close(); // compacts: the snapshot holds only what is retained
    expect(await keysOnDisk(file)).toEqual([]);
  });

  it('appends to a journal and compacts it into the snapshot once it is as long as the snapshot', async () => {
    const file = await fileIn();
    const store = new FileDeliveryStore({ file });
    for (let i = 0; i < 25_000; i += 500) {
      await Promise.all(Array.from({ length: 500 }, async (_, j) => {
        await store.claim([`k${i + j}`], 1000, 'me');
        await store.complete([`k${i + j}`]);
      }));
    }
    const journalLines = (await readFile(`${file}.journal`, 'utf8')).split('\n').filter(Boolean).length;
    const snapshotRows = (JSON.parse(await readFile(file, 'utf8')) as { processed: unknown[] }).processed.length;
    // 25,000 completions: compacted at 10,000 and at 20,000 (journal >= snapshot), 5,000 lines since.
    expect(snapshotRows).toBe(20_000);
    expect(journalLines).toBe(5_000);
    expect(new Set(await keysOnDisk(file)).size).toBe(25_000);
    await store.close();
    expect((await readFile(`${file}.journal`, 'utf8')).length).toBe(0);
    expect((JSON.parse(await readFile(file, 'utf8')) as { processed: unknown[] }).processed.length).toBe(25_000);
  });

  it('writes a row per delivery, its keys together, and keeps them together across a restart', async () => {
    const file = await fileIn();
    const first = new FileDeliveryStore({ file });
    await first.claim(['d:1', 'e:video.completed:1'], 1000, 'me');
    await first.complete(['d:1', 'e:video.completed:1']);
    await first.close();
    const second = new FileDeliveryStore({ file });
    await second.claim(['d:2', 'e:video.completed:2'], 1000, 'me');
    await second.complete(['d:2', 'e:video.completed:2']);
    await second.close(); // the loaded delivery is written again from what the load serialised
    const rows = (JSON.parse(await readFile(file, 'utf8')) as { processed: unknown[][] }).processed;
    expect(rows.map((row) => row.slice(0, -1))).toEqual([['d:1', 'e:video.completed:1'], ['d:2', 'e:video.completed:2']]);
  });

  it('tolerates a torn last journal line and a crash between a compaction and its truncation', async () => {
    const file = await fileIn();
    const store = new FileDeliveryStore({ file });
    for (const key of ['a', 'b']) {
      await store.claim([key], 1000, 'me');
      await store.complete([key]);
    }
    await store.close(); // snapshot holds a, b; journal empty
    // A crash after the snapshot's rename but before the truncation leaves its lines in the journal too;
    // a crash mid-append leaves half a line.
    const at = Date.now();
    await writeFile(`${file}.journal`, `["a",${at}]\n["b",${at}]\n["c",${at}]\n["d",17`);
    const restarted = new FileDeliveryStore({ file });
    for (const key of ['a', 'b', 'c']) expect(await restarted.claim([key], 1000, 'me')).toBe('processed');
    expect(await restarted.claim(['d'], 1000, 'me')).toBe('claimed');
    await restarted.complete(['d']);
    const lines = (await readFile(`${file}.journal`, 'utf8')).split('\n');
    expect(lines.at(-2)).toMatch(/^\["d",\d+\]$/); // the torn line did not swallow the next entry
    await restarted.close();
    expect((await keysOnDisk(file)).sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it("writes a delivery's keys on one journal line, and reads them back after a restart", async () => {
    const file = await fileIn();
    const store = new FileDeliveryStore({ file });
    expect(store.claim(['d:0'], 1000, 'me')).toBeInstanceOf(Promise); // the file is still loading
    expect(await store.claim(['d:0'], 1000, 'me')).toBe('in_progress');
    expect(store.claim(['d:1', 'e:video.completed:1'], 1000, 'me')).toBe('claimed'); // loaded: answered from memory
    await store.complete(['d:1', 'e:video.completed:1']);
    const lines = (await readFile(`${file}.journal`, 'utf8')).split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\["d:1","e:video\.completed:1",\d+\]$/);
    const restarted = new FileDeliveryStore({ file: await copyAsCrashed(file) });
    expect(await restarted.claim(['d:forged', 'e:video.completed:1'], 1000, 'me')).toBe('processed');
    expect(await restarted.claim(['d:1', 'e:video.completed:2'], 1000, 'me')).toBe('processed');
    await Promise.all([store.close(), restarted.close()]);
  });

  it('does not persist claims that were never completed', async () => {
    const file = await fileIn();
    const store = new FileDeliveryStore({ file });
    await store.claim(['done'], 1000, 'me');
    await store.complete(['done']);
    await store.claim(['crashed-mid-handler'], 1000, 'me');
    await store.close();
    expect(await new FileDeliveryStore({ file }).claim(['crashed-mid-handler'], 1000, 'me')).toBe('claimed');
  });

  it('reports a file that is not a deliveries file on first use', async () => {
    const file = await fileIn();
    const store0 = new FileDeliveryStore({ file });
    await store0.close();
    await writeFile(file, '{"hello":"world"}');
    const store = new FileDeliveryStore({ file });
    await expect(store.claim(['x'], 1000, 'me')).rejects.toThrow(/not a cliphook deliveries file/);
    // Issue 20 item 19: the journal opened to read it stayed open, for the garbage collector to close (DEP0137).
    if (process.platform === 'linux') {
      const held = [];
      for (const fd of await readdir('/proc/self/fd')) if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === `${file}.journal`) held.push(fd);
      expect(held).toEqual([]);
    }
  });

  it('validates its options', () => {
    expect(() => new FileDeliveryStore({ file: '' })).toThrow(/`file`/);
    expect(() => new FileDeliveryStore({ retentionMs: -5 })).toThrow(/`retentionMs`/);
  });

  it('refuses a second store on a file this process has open, and shares one through shared()', async () => {
    const file = await fileIn();
    const first = FileDeliveryStore.shared({ file });
    expect(FileDeliveryStore.shared({ file })).toBe(first);
    expect(() => new FileDeliveryStore({ file })).toThrow(/already open/);
    await first.close();
    const next = new FileDeliveryStore({ file });
    expect(next).not.toBe(first);
    await next.close();
  });

  it('receivers created without a store share the default file store', () => {
    const a = createReceiver({ secret: 'whsec_a' });
    const b = createReceiver({ secret: 'whsec_b' });
    expect(a.store).toBe(b.store);
    expect(a.store).toBeInstanceOf(FileDeliveryStore);
    expect(createReceiver({ secret: 'whsec_c', store: new MemoryDeliveryStore() }).store).not.toBe(a.store);
  });

  it.each([['empty', ''], ['torn', '{"version":1,"processed":[["d:1",17']])('moves an %s file aside with a warning and starts afresh', async (_name, text) => {
    const file = await fileIn();
    await (await import('node:fs/promises')).mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on('warning', listen);
    try {
      const store = new FileDeliveryStore({ file });
      expect(await store.claim(['d:1'], 1000, 'me')).toBe('claimed');
      await store.complete(['d:1']);
      await store.close();
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.some((w) => /moved to/.test(w.message))).toBe(true);
      expect((await readdir(dirname(file))).some((name) => name.includes('.corrupt-'))).toBe(true);
      expect(JSON.parse(await readFile(file, 'utf8')).processed.map(([k]: [string]) => k)).toEqual(['d:1']);
    } finally {
      process.off('warning', listen);
    }
  });
});
