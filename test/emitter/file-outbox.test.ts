import { mkdir, mkdtemp, readdir, rmdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEmitter, FileOutbox, type DeliveryRecord } from 'cliphook';
import { answering, completedPayload, settled, startServer, type TestServer } from './helpers.js';

const dirs: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-outbox-'));
  dirs.push(dir);
  return join(dir, 'nested', 'outbox.json');
}
const secret = 'whsec_file';
function record(id: string): DeliveryRecord {
  return {
    id, url: 'https://example.com/hook', secret, event: 'video.completed', state: 'pending', retry: true, createdAt: 0,
    nextAttemptAt: 0, round: 0, attempts: [], payload: JSON.stringify({ event: 'video.completed', ...completedPayload() }),
  };
}

describe('FileOutbox', () => {
  it('has the delivery on disk before its first attempt reaches the receiver', async () => {
    const file = await tempFile();
    let onDisk: unknown = null;
    const server: TestServer = await startServer((req, res) => {
      void readFile(file, 'utf8').then((text) => {
        onDisk = JSON.parse(text);
        res.end();
      });
    });
    cleanups.push(() => server.close());
    const emitter = createEmitter({ store: new FileOutbox({ file }), allowPrivateNetworks: true });
    cleanups.push(() => emitter.stop());
    await emitter.start();
    const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
    await settled(emitter, sent.id);
    expect(onDisk).toMatchObject({ version: 1, deliveries: [{ id: sent.id, secret, url: server.url, payload: { event: 'video.completed', id: 48213 } }] });
  });

  it('creates its folder private to its owner, since the file holds signing secrets', async () => {
    const file = await tempFile();
    const store = new FileOutbox({ file });
    await store.load();
    await store.close();
    expect((await stat(dirname(file))).mode & 0o777).toBe(0o700);
  });

  it('keeps state across restarts, and a second emitter resumes a scheduled retry', async () => {
    const file = await tempFile();
    const server = await answering(503);
    cleanups.push(() => server.close());
    const first = createEmitter({ store: new FileOutbox({ file }), allowPrivateNetworks: true, retrySchedule: [0] });
    await first.start();
    const sent = await first.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
    await settled(first, sent.id);
    await first.stop();
    const stored = JSON.parse(await readFile(file, 'utf8'));
    expect(stored.deliveries[0]).toMatchObject({ id: sent.id, state: 'failed', attempts: [{ status: 503 }, { status: 503 }] });
    expect(stored.deliveries[0].payload.delivered_at).toBeUndefined();

    const second = createEmitter({ store: new FileOutbox({ file }), allowPrivateNetworks: true });
    await second.start();
    expect(second.get(sent.id)).toMatchObject({ state: 'failed', payload: completedPayload() && { id: 48213 } });
    await second.stop();
  });

  it('group-commits a burst of sends into a few writes', async () => {
    const file = await tempFile();
    const store = new FileOutbox({ file });
    const server = await answering(200);
    cleanups.push(() => server.close());
    const emitter = createEmitter({ store, allowPrivateNetworks: true });
    await emitter.start();
    let delivered = 0;
    emitter.on('delivered', () => void delivered++);
    await Promise.all(Array.from({ length: 100 }, (_, i) =>
      emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload(i + 1) })));
    expect(store.writes).toBeLessThanOrEqual(3);
    await expect.poll(() => delivered).toBe(100);
    await emitter.stop();
    const stored = JSON.parse(await readFile(file, 'utf8'));
    expect(stored.deliveries).toHaveLength(100);
    expect(stored.deliveries.every((d: { state: string }) => d.state === 'delivered')).toBe(true);
  });

  it('refuses a file that is not an outbox, naming it', async () => {
    const file = await tempFile();
    const first = new FileOutbox({ file });
    await first.load(); // creates the folder
    await first.close();
    await writeFile(file, '{"something":"else"}');
    const second = new FileOutbox({ file });
    await expect(second.load()).rejects.toThrow(/not a cliphook outbox file/);
    await second.close().catch(() => undefined);
    expect(() => new FileOutbox({ file: '' })).toThrow(/`file`/);
  });

  it('does not write the file on close when it only loaded it (another process may have written since)', async () => {
    const file = await tempFile();
    const writer = new FileOutbox({ file });
    await writer.save(record('dlv_first'));
    await writer.close();
    const reader = new FileOutbox({ file });
    expect((await reader.load()).map((r) => r.id)).toEqual(['dlv_first']);
    // Meanwhile a `trigger --retry` in another process records a second delivery.
    const other = JSON.parse(await readFile(file, 'utf8'));
    other.deliveries.push({ ...other.deliveries[0], id: 'dlv_second' });
    await writeFile(file, JSON.stringify(other));
    await reader.close();
    expect(reader.writes).toBe(0);
    expect(JSON.parse(await readFile(file, 'utf8')).deliveries.map((d: { id: string }) => d.id)).toEqual(['dlv_first', 'dlv_second']);
  });

  it('writes on close a change whose write failed', async () => {
    const file = await tempFile();
    const outbox = new FileOutbox({ file });
    await outbox.load();
    // A folder where the write's temporary file goes: the write fails (even for root).
    const temp = join(dirname(file), '.outbox.json.tmp');
    await mkdir(temp);
    await expect(outbox.save(record('dlv_late'))).rejects.toThrow();
    await rmdir(temp);
    await outbox.close();
    expect(JSON.parse(await readFile(file, 'utf8')).deliveries.map((d: { id: string }) => d.id)).toEqual(['dlv_late']);
  });

  it('recovers a torn file: every complete delivery is kept, the torn file set aside, a warning given', async () => {
    const file = await tempFile();
    const writer = new FileOutbox({ file });
    for (const id of ['dlv_one', 'dlv_two', 'dlv_three']) await writer.save(record(id));
    await writer.close();
    const whole = await readFile(file, 'utf8');
    const torn = whole.slice(0, whole.indexOf('dlv_three') + 30);
    await writeFile(file, torn);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const outbox = new FileOutbox({ file });
      expect((await outbox.load()).map((r) => r.id)).toEqual(['dlv_one', 'dlv_two']);
      await outbox.close();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(/was torn \(not valid JSON\): recovered 2 deliveries from it, kept as .*outbox\.json\.torn-\d+/);
    } finally {
      warn.mockRestore();
    }
    expect(JSON.parse(await readFile(file, 'utf8')).deliveries.map((d: { id: string }) => d.id)).toEqual(['dlv_one', 'dlv_two']);
    const aside = (await readdir(dirname(file))).filter((name) => name.startsWith('outbox.json.torn-'));
    expect(await readFile(join(dirname(file), aside[0]!), 'utf8')).toBe(torn);
  });

  it('leaves a torn file in place while its repair cannot be written, and the next load recovers it', async () => {
    const file = await tempFile();
    const writer = new FileOutbox({ file });
    for (const id of ['dlv_one', 'dlv_two', 'dlv_three']) await writer.save(record(id));
    await writer.close();
    const whole = await readFile(file, 'utf8');
    const torn = whole.slice(0, whole.indexOf('dlv_three') + 30);
    await writeFile(file, torn);
    const tornCopies = async () => (await readdir(dirname(file))).filter((name) => name.startsWith('outbox.json.torn-'));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      // The repaired file cannot be written (a folder where its temporary file goes, as a full disk would).
      const temp = join(dirname(file), '.outbox.json.tmp');
      await mkdir(temp);
      const failing = new FileOutbox({ file });
      await expect(failing.load()).rejects.toThrow();
      await failing.close();
      expect(await readFile(file, 'utf8')).toBe(torn);
      expect(await tornCopies()).toEqual([]); // the torn file itself is still the copy to recover from
      expect(warn).not.toHaveBeenCalled();
      await rmdir(temp);

      const next = new FileOutbox({ file });
      expect((await next.load()).map((r) => r.id)).toEqual(['dlv_one', 'dlv_two']);
      await next.close();
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
    expect(JSON.parse(await readFile(file, 'utf8')).deliveries.map((d: { id: string }) => d.id)).toEqual(['dlv_one', 'dlv_two']);
    const copies = await tornCopies();
    expect(copies).toHaveLength(1);
    expect(await readFile(join(dirname(file), copies[0]!), 'utf8')).toBe(torn);
  });

  it('refuses a second outbox on a file that is open, until the first is closed', async () => {
    const file = await tempFile();
    const first = new FileOutbox({ file });
    expect(() => new FileOutbox({ file })).toThrow(TypeError);
    expect(() => new FileOutbox({ file: `${file}/../outbox.json` })).toThrow(/already open/);
    const emitter = createEmitter({ store: first });
    await emitter.start();
    await emitter.stop();
    const second = new FileOutbox({ file });
    await second.close();
  });
});
