import { mkdir, mkdtemp, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileLockedError, type DeliveryRecord } from 'cliphook';
import { SharedFileOutbox } from '../../src/emitter/shared-file-outbox.js';
import { FileLock } from '../../src/store/file-lock.js';
import { completedPayload } from './helpers.js';

// Two instances on one file stand for two processes: each is its own sender, with its own lock.
let dir: string;
let file: string;
const cleanups: (() => unknown)[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cliphook-shared-'));
  file = join(dir, 'outbox.json');
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(dir, { recursive: true, force: true });
});

function open(options: { lockWaitMs?: number; clock?: { now(): number; setTimeout(callback: () => void, ms: number): unknown }; warn?: (message: string) => void } = {}): SharedFileOutbox {
  const outbox = new SharedFileOutbox({ file, warn: () => undefined, ...options });
  cleanups.push(() => outbox.close());
  return outbox;
}

function record(id: string, state: DeliveryRecord['state'] = 'pending'): DeliveryRecord {
  return {
    id, url: 'https://example.com/hook', secret: 'whsec_shared', event: 'video.completed', state, retry: true, createdAt: 0,
    nextAttemptAt: state === 'pending' ? 0 : null, round: 0, attempts: [], payload: JSON.stringify({ event: 'video.completed', ...completedPayload() }),
  };
}

const rowsOnDisk = async () => JSON.parse(await readFile(file, 'utf8')).deliveries as { id: string; state: string; owner?: string }[];
const idsOnDisk = async () => JSON.parse(await readFile(file, 'utf8')).deliveries.map((d: { id: string }) => d.id);

describe('SharedFileOutbox', () => {
  it("keeps every process's deliveries, and never hands one a waiting delivery that a live other is sending", async () => {
    const a = open();
    expect(await a.load()).toEqual([]);
    const mineA = record('dlv_a');
    await a.save(mineA);
    const b = open();
    expect(await b.load()).toEqual([]); // dlv_a waits in a live process
    expect(b.heldBy('dlv_a')?.holder).toMatchObject({ pid: process.pid });
    expect(await b.claim('dlv_a')).toMatchObject({ holder: { pid: process.pid } });
    await Promise.all([b.save(record('dlv_b')), a.save(Object.assign(mineA, { state: 'delivered', nextAttemptAt: null }))]);
    expect((await idsOnDisk()).sort()).toEqual(['dlv_a', 'dlv_b']);

    // b goes away with dlv_b still waiting: the next one takes it, and dlv_a (finished, nobody's) too.
    await b.close();
    const c = open();
    expect((await c.load()).map((r) => [r.id, r.state])).toEqual([['dlv_a', 'delivered'], ['dlv_b', 'pending']]);
    expect(JSON.parse(await readFile(file, 'utf8')).deliveries.find((d: { id: string }) => d.id === 'dlv_b').owner).toBe(c.owner);
  });

  it("forgets a finished delivery only if no other process has taken it since", async () => {
    const a = open();
    await a.save(record('dlv_done', 'delivered'));
    await a.save(record('dlv_old', 'delivered'));
    const b = open();
    await b.load();
    expect(await b.claim('dlv_done')).toBeUndefined(); // b redelivers it
    await a.delete(['dlv_done', 'dlv_old']);
    expect(await idsOnDisk()).toEqual(['dlv_done']);
  });

  it('treats the owner of a finished delivery as gone once its process is: retention forgets it, a load clears it', async () => {
    const a = open();
    await a.save(record('dlv_done', 'delivered'));
    await a.save(record('dlv_old', 'delivered'));
    const b = open();
    await b.load();
    expect(await b.claim('dlv_done')).toBeUndefined();
    expect(await b.claim('dlv_old')).toBeUndefined();
    await b.close(); // b dies before its redeliveries' first save: both rows stay finished, owned by b
    expect(await rowsOnDisk()).toMatchObject([{ id: 'dlv_done', owner: b.owner }, { id: 'dlv_old', owner: b.owner }]);

    const c = open();
    await c.load();
    expect(await rowsOnDisk()).toEqual([
      expect.not.objectContaining({ owner: expect.anything() }),
      expect.not.objectContaining({ owner: expect.anything() }),
    ]);
    await a.delete(['dlv_done', 'dlv_old']);
    expect(await idsOnDisk()).toEqual([]);
  });

  it('lets retention forget a finished delivery whose claiming process died, without a load in between', async () => {
    const a = open();
    await a.save(record('dlv_done', 'delivered'));
    const b = open();
    await b.load();
    expect(await b.claim('dlv_done')).toBeUndefined();
    await b.close();
    await a.delete(['dlv_done']);
    expect(await idsOnDisk()).toEqual([]);
  });

  it('keeps a change whose write failed, and writes it on close: a finished delivery is not resumed as waiting', async () => {
    const a = open();
    await a.load();
    const sent = record('dlv_sent');
    await a.save(sent);
    // A folder where the write's temporary file goes: the write fails (even for root).
    const temp = join(dir, '.outbox.json.tmp');
    await mkdir(temp);
    await expect(a.save({ ...sent, state: 'delivered', nextAttemptAt: null })).rejects.toThrow();
    expect(await rowsOnDisk()).toMatchObject([{ id: 'dlv_sent', state: 'pending', owner: a.owner }]);
    await rmdir(temp);
    await a.close();
    expect(await rowsOnDisk()).toEqual([expect.not.objectContaining({ owner: expect.anything() })]);
    expect(await rowsOnDisk()).toMatchObject([{ id: 'dlv_sent', state: 'delivered' }]);
    const next = open();
    expect((await next.load()).map((r) => [r.id, r.state])).toEqual([['dlv_sent', 'delivered']]);
  });

  it('claims a delivery only once the file says so: a claim whose write failed is made again', async () => {
    const a = open();
    await a.save(record('dlv_done', 'delivered'));
    const b = open();
    await b.load();
    const temp = join(dir, '.outbox.json.tmp');
    await mkdir(temp);
    await expect(b.claim('dlv_done')).rejects.toThrow();
    await rmdir(temp);
    expect(await b.claim('dlv_done')).toBeUndefined();
    expect(await rowsOnDisk()).toMatchObject([{ id: 'dlv_done', owner: b.owner }]);
  });

  it('leaves a torn file in place until its repair is written, then recovers every complete delivery in it', async () => {
    const writer = open();
    for (const id of ['dlv_one', 'dlv_two', 'dlv_three']) await writer.save(record(id, 'delivered'));
    await writer.close();
    const whole = await readFile(file, 'utf8');
    const torn = whole.slice(0, whole.indexOf('dlv_three') + 30);
    await writeFile(file, torn);
    const warnings: string[] = [];
    const warn = (message: string) => void warnings.push(message);
    const tornCopies = async () => (await readdir(dir)).filter((name) => name.startsWith('outbox.json.torn-'));

    // The copy cannot be made (its name is taken): nothing is touched.
    const clock = { now: () => 7, setTimeout: (callback: () => void) => setImmediate(callback) };
    await mkdir(`${file}.torn-7`);
    await expect(open({ clock, warn }).load()).rejects.toThrow();
    expect(await readFile(file, 'utf8')).toBe(torn);
    await rmdir(`${file}.torn-7`);

    // The repaired file cannot be written (a folder where its temporary file goes, as a full disk would).
    const temp = join(dir, '.outbox.json.tmp');
    await mkdir(temp);
    await expect(open({ warn }).load()).rejects.toThrow();
    expect(await readFile(file, 'utf8')).toBe(torn);
    expect(await tornCopies()).toEqual([]);
    expect(warnings).toEqual([]);
    await rmdir(temp);

    expect((await open({ warn }).load()).map((r) => r.id)).toEqual(['dlv_one', 'dlv_two']);
    expect(await idsOnDisk()).toEqual(['dlv_one', 'dlv_two']);
    expect(warnings).toEqual([expect.stringMatching(/recovered 2 deliveries from it; the torn file is kept as .*outbox\.json\.torn-\d+$/)]);
    const copies = await tornCopies();
    expect(copies).toHaveLength(1);
    expect(await readFile(join(dir, copies[0]!), 'utf8')).toBe(torn);
  });

  it('waits for a lock another process holds a moment, and fails naming it once lockWaitMs have passed', async () => {
    const held = FileLock.acquire(file, 'test');
    cleanups.push(() => held.release());
    let now = 0;
    const waits: number[] = [];
    // A clock that moves 4 s at each wait: no real time passes.
    const clock = { now: () => now, setTimeout: (callback: () => void, ms: number) => (waits.push(ms), (now += 4_000), setImmediate(callback)) };
    const error = await open({ lockWaitMs: 10_000, clock }).load().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FileLockedError);
    expect((error as FileLockedError).holder).toMatchObject({ pid: process.pid });
    expect(waits).toHaveLength(3);

    now = 0;
    const patient = open({ lockWaitMs: 10_000, clock: { now: () => now, setTimeout: (callback: () => void) => (held.release(), setImmediate(callback)) } });
    expect(await patient.load()).toEqual([]);
  });
});
