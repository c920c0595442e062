import { copyFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileDeliveryStore, MemoryDeliveryStore, createReceiver } from '../../src/index.js';
import { tempDir } from '../helpers/webhooks.js';

let cleanup: () => Promise<void> = async () => {};
afterEach(() => cleanup());

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
    const crashed = `${file}.after-crash`;
    await copyFile(file, crashed);
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
        const onDisk = JSON.parse(await readFile(file, 'utf8')) as { processed: [string, number][] };
        expect(onDisk.processed.some(([key]) => key === `k${i}`)).toBe(true);
      }),
    );
    expect(store.writes).toBeLessThanOrEqual(3);
    expect(store.writes).toBeGreaterThanOrEqual(1);
  });

  it('prunes deliveries older than the retention on restart and on write', async () => {
    const file = await fileIn();
    let now = 1_000_000;
    const store = new FileDeliveryStore({ file, retentionMs: 60_000, clock: () => now });
    await store.claim(['early'], 1000, 'me');
    await store.complete(['early']);
    now += 30_000;
    await store.claim(['late'], 1000, 'me');
    await store.complete(['late']);
    now += 40_000;
    await store.claim(['trigger'], 1000, 'me');
    await store.complete(['trigger']);
    const keys = (JSON.parse(await readFile(file, 'utf8')) as { processed: [string, number][] }).processed.map(([k]) => k);
    expect(keys).toEqual(['late', 'trigger']);
    now += 1_000_000;
    await store.close();
    const reopened = new FileDeliveryStore({ file, retentionMs: 60_000, clock: () => now });
    expect(await reopened.claim(['late'], 1000, 'me')).toBe('claimed');
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
