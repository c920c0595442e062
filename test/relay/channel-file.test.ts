import { appendFile, copyFile, readFile, readdir, readlink, writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { RELAY_FILE_HEADER } from '../../src/relay/channel-file.js';
import { ChannelStore, type Channel, type ChannelStoreOptions, type StoredEvent } from '../../src/relay/channels.js';
import { nodeLineFileIo, type LineFileIo } from '../../src/store/line-file-io.js';
import { manualScheduler, testdir } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function event(deliveryId: string | null, body = 'x'.repeat(300)): Omit<StoredEvent, 'seq'> {
  return { receivedAt: 1_000, method: 'POST', path: '/hook', query: '?a=1', headers: ['X-Service-Delivery', deliveryId ?? ''], body: Buffer.from(body), eventName: 'video.completed', deliveryId };
}

async function openStore(file: string, extra: Partial<ChannelStoreOptions> = {}) {
  const options: ChannelStoreOptions = { file, clock: () => 2_000, maxEvents: 100, maxBytes: 1e7, maxAgeMs: 1e9, scheduler: manualScheduler(), lazyCommitMs: 10, seqBlock: 4, ...extra };
  const store = new ChannelStore(options);
  await store.open();
  cleanups.push(() => store.close());
  return store;
}

/** What a listener or --replay could notice of a channel: every event with its bytes, the acked ones, and the next number. */
function state(store: ChannelStore, ids: string[]) {
  return ids.map((id) => {
    const channel = store.get(id);
    if (!channel) return null;
    return {
      events: channel.events.map((e) => ({ seq: e.seq, body: e.body.toString(), path: e.path, query: e.query, headers: e.headers, deliveryId: e.deliveryId, eventName: e.eventName })),
      acked: [...channel.acked].sort((a, b) => a - b),
    };
  });
}

/** Fills a store: three channels, events, acks, a replaced delivery, a deleted channel. */
async function fill(store: ChannelStore): Promise<string[]> {
  const channels: Channel[] = [];
  for (let i = 0; i < 3; i++) channels.push(store.create()!.channel);
  const [a, b, c] = channels as [Channel, Channel, Channel];
  for (let i = 0; i < 6; i++) store.append(a, event(`dlv_a${i}`, `body a${i} é 🦊`));
  store.append(a, event('dlv_a5', 'retried a5')); // replaces the waiting copy
  for (const seq of [1, 2, 4]) store.ack(a, seq);
  store.append(b, event(null, 'b only'));
  store.append(c, event('dlv_c'));
  store.delete(c.id);
  await store.commit();
  return [a.id, b.id, c.id];
}

describe('relay data file', () => {
  for (const compactAfterBytes of [undefined, 1]) {
    const how = compactAfterBytes ? 'compacting on every write' : 'journal only';
    it(`keeps every buffered and acked event across a close and reopen, and across a crash (${how})`, async () => {
      const { dir, cleanup } = await testdir();
      cleanups.push(cleanup);
      const file = `${dir}/relay.json`;
      const store = await openStore(file, compactAfterBytes ? { compactAfterBytes } : {});
      const ids = await fill(store);
      const before = state(store, ids);
      expect(before[2]).toBeNull();
      expect(before[0]!.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 7]);
      expect(before[0]!.acked).toEqual([1, 2, 4]);

      // A crash: no close(). What is on disk, copied to a new path (this process holds the lock).
      await copyFile(file, `${dir}/crashed.json`).catch(() => undefined);
      await copyFile(`${file}.journal`, `${dir}/crashed.json.journal`);
      const crashed = await openStore(`${dir}/crashed.json`);
      expect(state(crashed, ids)).toEqual(before);
      // Numbers handed out up to the reserved limit are never reused (seqBlock 4: 1-4, then 5-8).
      expect((crashed.append(crashed.get(ids[0]!)!, event(null)) as StoredEvent).seq).toBe(9);

      await store.close();
      const reopened = await openStore(file);
      expect(state(reopened, ids)).toEqual(before);
      expect(reopened.totalBytes).toBe(store.totalBytes);
    });
  }

  it('writes a busy second of events in several buffers, every line whole across their seams (issue 23)', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const store = await openStore(file, { maxEvents: 1_000 });
    const { channel } = store.create()!;
    // About 1 MB of lines in one write: more than the first buffers (16, 32, 64 KiB…) hold, with multi-byte
    // characters and bodies of many sizes, so lines meet the seams at every offset.
    for (let i = 0; i < 600; i++) store.append(channel, event(`dlv_${i}`, `é🦊${'x'.repeat((i * 37) % 2_000)}${i}`));
    await store.commit();
    const before = state(store, [channel.id]);
    const journal = await readFile(`${file}.journal`, 'utf8');
    expect(journal.length).toBeGreaterThan(900_000);
    expect(journal.split('\n').filter(Boolean).every((line) => JSON.parse(line) !== null)).toBe(true);
    await store.close();
    expect(state(await openStore(file, { maxEvents: 1_000 }), [channel.id])).toEqual(before);
  });

  it('replays a journal left beside the snapshot that holds it (a crash between a compaction and its truncation)', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const keepJournal: LineFileIo = { ...nodeLineFileIo, truncate: async () => undefined };
    const store = await openStore(file, { compactAfterBytes: 1, io: keepJournal });
    const ids = await fill(store);
    const channel = store.get(ids[0]!)!;
    store.ack(channel, 3);
    await store.commit();
    const before = state(store, ids);
    await store.close();
    expect((await readFile(`${file}.journal`, 'utf8')).length).toBeGreaterThan(0);
    expect(state(await openStore(file), ids)).toEqual(before);
  });

  it('skips a torn last line and says so once', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const store = await openStore(file);
    const ids = await fill(store);
    const before = state(store, ids);
    await store.close();
    await appendFile(`${file}.journal`, '{"op":"event","ch":"abc","seq":9,"bo');
    const warnings: string[] = [];
    const reopened = await openStore(file, { log: { info() {}, warn: (line) => warnings.push(line) } });
    expect(state(reopened, ids)).toEqual(before);
    expect(warnings).toEqual([expect.stringMatching(/skipped 1 unreadable line/)]);
    // The next line starts on a line of its own.
    reopened.append(reopened.get(ids[1]!)!, event(null, 'after the tear'));
    await reopened.close();
    const again = await openStore(file);
    expect(again.get(ids[1]!)!.events.map((e) => e.body.toString())).toEqual(['b only', 'after the tear']);
  });

  // Issue 20 item 19: the journal opened for a file that is then refused was left to the garbage collector.
  it.runIf(process.platform === 'linux')('refuses a file that is not a relay file, and leaves no handle open on its journal', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    await writeFile(file, JSON.stringify({ version: 7, something: [] }));
    const store = new ChannelStore({ file, clock: () => 2_000, maxEvents: 100, maxBytes: 1e7, maxAgeMs: 1e9, scheduler: manualScheduler(), lazyCommitMs: 10 });
    await expect(store.open()).rejects.toThrow(/is not a cliphook relay file/);
    const held = [];
    for (const fd of await readdir('/proc/self/fd')) if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === `${file}.journal`) held.push(fd);
    expect(held).toEqual([]);
    // And the lock went with it: the file opens once it is a relay file.
    await writeFile(file, '');
    await (await openStore(file)).commit();
  });

  it('loads a version 1 document and rewrites it as lines at the first write', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const saved = (seq: number, body: string) => ({ seq, receivedAt: 1_000, method: 'POST', path: '', query: '', headers: [], body: Buffer.from(body).toString('base64'), eventName: null, deliveryId: `dlv_${seq}` });
    const v1 = {
      version: 1,
      channels: [
        { id: 'chanOne', tokenHash: 'a'.repeat(64), createdAt: 5, nextSeq: 3, seqLimit: 1027, events: [saved(1, 'one'), saved(2, 'two')], acked: [1] },
        { id: 'chanTwo', tokenHash: 'b'.repeat(64), createdAt: 6, nextSeq: 1, events: [] },
      ],
    };
    await writeFile(file, JSON.stringify(v1));
    const store = await openStore(file);
    const one = store.get('chanOne')!;
    expect(one.events.map((e) => [e.seq, e.body.toString(), e.deliveryId])).toEqual([[1, 'one', 'dlv_1'], [2, 'two', 'dlv_2']]);
    expect([...one.acked]).toEqual([1]);
    // A crash may have handed out numbers up to the reserved limit: the next one is above it.
    expect((store.append(one, event(null)) as StoredEvent).seq).toBe(1027);
    expect(store.get('chanTwo')!.nextSeq).toBe(1);
    await store.commit();
    expect((await readFile(file, 'utf8')).split('\n')[0]).toBe(RELAY_FILE_HEADER);
    await store.close();
    const reopened = await openStore(file);
    expect(reopened.get('chanOne')!.events.map((e) => e.seq)).toEqual([1, 2, 1027]);
    expect([...reopened.get('chanOne')!.acked]).toEqual([1]);
  });

  it('writes a snapshot in pieces of one line each, never as one string', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const pieces: number[] = [];
    const io: LineFileIo = {
      ...nodeLineFileIo,
      replace: (file, temp, parts) => nodeLineFileIo.replace(file, temp, (function* () {
        for (const part of parts) {
          pieces.push(part.length);
          yield part;
        }
      })()),
    };
    const store = await openStore(`${dir}/relay.json`, { compactAfterBytes: 1, io });
    const { channel } = store.create()!;
    for (let i = 0; i < 50; i++) store.append(channel, event(null, 'y'.repeat(10_000)));
    await store.commit();
    expect(pieces.length).toBeGreaterThanOrEqual(52); // header, channel, 50 events
    expect(Math.max(...pieces)).toBeLessThan(14_000); // one event's line: 10,000 bytes as base64 plus its head
  });
});

describe('relay data file acknowledgements (issue 23)', () => {
  it('writes the acknowledgements made between two writes as one line per channel, after the events they acknowledge', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const store = await openStore(file, { maxEvents: 1_000, seqBlock: 1_000 });
    const a = store.create()!.channel;
    const b = store.create()!.channel;
    await store.commit();
    // Interleaved as a busy channel has them: an event, the acknowledgement of an earlier one, the next event…
    for (let i = 1; i <= 50; i++) {
      store.append(a, event(`dlv_a${i}`));
      if (i > 1) store.ack(a, i - 1);
      if (i % 10 === 0) store.append(b, event(`dlv_b${i}`));
    }
    store.ack(a, 50);
    store.ack(b, 1);
    await store.commit();
    const lines = (await readFile(`${file}.journal`, 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { op: string; ch?: string; seqs?: number[] });
    const acks = lines.filter((line) => line.op === 'ack');
    expect(acks).toEqual([
      { op: 'ack', ch: a.id, seqs: Array.from({ length: 50 }, (_, i) => i + 1) },
      { op: 'ack', ch: b.id, seqs: [1] },
    ]);
    expect(lines.findIndex((line) => line.op === 'ack')).toBeGreaterThan(lines.findLastIndex((line) => line.op === 'event'));

    // A crash now: every acknowledged event stays acknowledged, so a catch-up resends only b's last four.
    await copyFile(`${file}.journal`, `${dir}/crashed.json.journal`);
    const crashed = await openStore(`${dir}/crashed.json`);
    expect(crashed.unacked(crashed.get(a.id)!, () => true)).toEqual([]);
    expect(crashed.unacked(crashed.get(b.id)!, () => true).map((e) => e.deliveryId)).toEqual(['dlv_b20', 'dlv_b30', 'dlv_b40', 'dlv_b50']);
  });

  it('never writes the line of an event dropped before the write: a replaced copy, a deleted channel', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const store = await openStore(file);
    const a = store.create()!.channel;
    const b = store.create()!.channel;
    await store.commit();
    store.append(a, event('dlv_1', 'first try'));
    store.append(a, event('dlv_1', 'second try')); // replaces the waiting copy
    store.append(b, event('dlv_2', 'gone with its channel'));
    store.delete(b.id);
    await store.commit();
    const lines = (await readFile(`${file}.journal`, 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { op: string; body?: string });
    expect(lines.filter((line) => line.op === 'event').map((line) => Buffer.from(line.body!, 'base64').toString())).toEqual(['second try']);
  });

  it('writes acknowledgements still held when the store closes', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const file = `${dir}/relay.json`;
    const store = await openStore(file);
    const a = store.create()!.channel;
    store.append(a, event('dlv_1'));
    await store.commit();
    store.ack(a, 1);
    await store.close();
    const reopened = await openStore(file);
    expect([...reopened.get(a.id)!.acked]).toEqual([1]);
  });
});

describe('relay data file compaction', () => {
  it('loses nothing that changes while a snapshot is being written', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    let release!: () => void;
    let started!: () => void;
    const writing = new Promise<void>((resolve) => (started = resolve));
    const gate = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    const io: LineFileIo = {
      ...nodeLineFileIo,
      // The first snapshot pauses after its first pieces, as a long write would, while the store goes on.
      replace: (file, temp, parts) =>
        nodeLineFileIo.replace(file, temp, (function* () {
          let n = 0;
          for (const part of parts) {
            yield part;
            if (first && ++n === 3) {
              first = false;
              started();
            }
          }
        })()).then(async (bytes) => (await gate, bytes)),
    };
    const file = `${dir}/relay.json`;
    const store = await openStore(file, { io, compactAfterBytes: 4000, maxBytes: 1e9 });
    const { channel } = store.create()!;
    // Large enough that the snapshot takes several 1 MiB writes, so the store runs between them.
    for (let i = 0; i < 20; i++) store.append(channel, event(`dlv_${i}`, `${i}`.repeat(400_000)));
    const compaction = store.commit();
    await writing;
    // While it runs: an event already written is removed (a retry replaces seq 1), acks, new events, a new channel.
    store.append(channel, event('dlv_0', 'a retry replaces seq 1'));
    for (const seq of [1, 2, 6]) store.ack(channel, seq);
    const other = store.create()!.channel;
    store.append(other, event(null, 'other'));
    const after = store.commit();
    release();
    await compaction;
    await after;
    const ids = [channel.id, other.id];
    const before = state(store, ids);
    expect(before[0]!.events.map((e) => e.seq)).not.toContain(1);
    expect(before[0]!.events).toHaveLength(20);
    await copyFile(file, `${dir}/crashed.json`);
    await copyFile(`${file}.journal`, `${dir}/crashed.json.journal`);
    expect(state(await openStore(`${dir}/crashed.json`), ids)).toEqual(before);
  });
});

describe('relay data file on a disk too full for a snapshot', () => {
  it('goes on appending to the journal, says so, and leaves no half-written snapshot behind', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const io: LineFileIo = {
      ...nodeLineFileIo,
      // The snapshot's writes fail part-way, as on a full disk; appends still fit.
      replace: (file, temp, parts) =>
        nodeLineFileIo.replace(file, temp, (function* () {
          let n = 0;
          for (const part of parts) {
            if (++n > 2) throw full;
            yield part;
          }
        })()),
    };
    const warnings: string[] = [];
    const file = `${dir}/relay.json`;
    const store = await openStore(file, { io, compactAfterBytes: 1, log: { info() {}, warn: (line) => warnings.push(line) } });
    const ids = await fill(store);
    expect(store.health).toEqual({ ok: true });
    expect(warnings.some((line) => line.includes('cannot rewrite'))).toBe(true);
    await expect(readFile(`${dir}/.relay.json.tmp`)).rejects.toMatchObject({ code: 'ENOENT' });
    const before = state(store, ids);
    await copyFile(`${file}.journal`, `${dir}/crashed.json.journal`);
    expect(state(await openStore(`${dir}/crashed.json`), ids)).toEqual(before);
  });
});
