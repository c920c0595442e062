import { copyFile, readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelStore, type StoredEvent } from '../../src/relay/channels.js';
import { realScheduler } from '../../src/relay/heartbeat.js';
import { testdir } from './fixtures.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const seqOf = (stored: StoredEvent | string) => (typeof stored === 'string' ? stored : stored.seq);

function event(receivedAt: number, deliveryId: string | null = null): Omit<StoredEvent, 'seq'> {
  return { receivedAt, method: 'POST', path: '', query: '', headers: [], body: Buffer.alloc(0), eventName: 'video.completed', deliveryId };
}

describe('ChannelStore', () => {
  it('makes unguessable ids, keeps only a sha256 of the token, and checks it', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const store = new ChannelStore({ file: `${dir}/relay.json`, clock: () => 0, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 });
    await store.open();
    const { channel, token } = store.create()!;
    await store.commit();
    expect(Buffer.from(channel.id, 'base64url').length * 8).toBeGreaterThanOrEqual(128);
    const text = await readFile(`${dir}/relay.json.journal`, 'utf8');
    await store.close();
    expect(text).not.toContain(token);
    expect(text).toContain(channel.tokenHash);
    expect(store.check(channel.id, token)).toBe('ok');
    expect(store.check(channel.id, `${token}x`)).toBe('invalid_token');
    expect(store.check(channel.id, undefined)).toBe('invalid_token');
    expect(store.check('missing', token)).toBe('not_found');
  });

  it('numbers events, bounds them by count (refusing rather than dropping unacknowledged ones) and by age', () => {
    let now = 0;
    const store = new ChannelStore({ file: false, clock: () => now, maxEvents: 3, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 });
    const { channel } = store.create()!;
    expect([1, 2, 3].map(() => seqOf(store.append(channel, event(now))))).toEqual([1, 2, 3]);
    expect(store.append(channel, event(now))).toBe('channel_events');
    store.ack(channel, 1);
    expect(seqOf(store.append(channel, event(now)))).toBe(4);
    expect(store.unacked(channel, () => true).map((e) => e.seq)).toEqual([2, 3, 4]);
    now = 5000;
    expect(store.unacked(channel, () => true)).toEqual([]);
  });

  it('bounds the buffered body bytes too, dropping acknowledged events first', () => {
    const store = new ChannelStore({ file: false, clock: () => 0, maxEvents: 100, maxBytes: 100, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 });
    const { channel } = store.create()!;
    // Bounds count base64 bytes, as the data file keeps bodies: 45 bytes are 60.
    const sized = (base64Bytes: number) => ({ ...event(0), body: Buffer.alloc((base64Bytes / 4) * 3) });
    expect(seqOf(store.append(channel, sized(60)))).toBe(1);
    expect(store.append(channel, sized(60))).toBe('channel_bytes');
    store.ack(channel, 1);
    expect(seqOf(store.append(channel, sized(60)))).toBe(2);
    expect(channel.events.map((e) => e.seq)).toEqual([2]);
  });

  it('makes room by dropping the oldest acknowledged events, past unacknowledged ones, in order, and ages out any (issue 23)', () => {
    let now = 0;
    const store = new ChannelStore({ file: false, clock: () => now, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 });
    const { channel } = store.create()!;
    for (let i = 0; i < 10; i++) store.append(channel, event(i === 6 ? -5000 : 0, `dlv_${i + 1}`));
    // 1 and 4 wait; the rest are acknowledged. A tenth of the bound goes for room, the oldest acknowledged
    // first (2), past the waiting 1; 7 is past the age bound and goes too, wherever it is.
    for (const seq of [2, 3, 5, 6, 7, 8, 9, 10]) store.ack(channel, seq);
    now = 10;
    expect(seqOf(store.append(channel, event(now, 'dlv_11')))).toBe(11);
    expect(channel.events.map((e) => e.seq)).toEqual([1, 3, 4, 5, 6, 8, 9, 10, 11]);
    expect(store.find(channel, 'dlv_1')?.seq).toBe(1);
    expect(store.find(channel, 'dlv_2')).toBeUndefined();
    // All acknowledged and in order: the prefix goes at once, the rest stays as it was.
    for (const seq of [1, 4, 11]) store.ack(channel, seq);
    store.append(channel, event(now));
    expect(channel.events.map((e) => e.seq)).toEqual([1, 3, 4, 5, 6, 8, 9, 10, 11, 12]);
    store.append(channel, event(now));
    expect(channel.events.map((e) => e.seq)).toEqual([3, 4, 5, 6, 8, 9, 10, 11, 12, 13]);
    store.append(channel, event(now));
    expect(channel.events.map((e) => e.seq)).toEqual([4, 5, 6, 8, 9, 10, 11, 12, 13, 14]);
  });

  it('finds an event by sequence number or delivery id, and survives a reopen', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const options = { file: `${dir}/relay.json`, clock: () => 0, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 };
    const store = new ChannelStore(options);
    await store.open();
    const { channel, token } = store.create()!;
    store.append(channel, event(0, 'dlv_a'));
    store.append(channel, event(0, 'dlv_b'));
    store.ack(channel, 1);
    await store.close();
    const reopened = new ChannelStore(options);
    await reopened.open();
    // Closed after the test: a store left open is a FileHandle Node closes on garbage collection (DEP0137).
    cleanups.push(() => reopened.close());
    const again = reopened.get(channel.id)!;
    expect(reopened.check(channel.id, token)).toBe('ok');
    expect(reopened.find(again, '2')?.deliveryId).toBe('dlv_b');
    expect(reopened.find(again, 'dlv_a')?.seq).toBe(1);
    expect(reopened.unacked(again, () => true).map((e) => e.seq)).toEqual([2]);
    expect(seqOf(reopened.append(again, event(0)))).toBe(3);
  });

  it('reserves sequence numbers on disk before handing them out, so a crash never reuses one', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const options = { file: `${dir}/relay.json`, clock: () => 0, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 60_000, seqBlock: 4 };
    const store = new ChannelStore(options);
    await store.open();
    cleanups.push(() => store.close());
    const { channel } = store.create()!;
    await store.commit();
    expect(seqOf(store.append(channel, event(0)))).toBe(1);
    expect(seqOf(store.append(channel, event(0)))).toBe(2);
    await store.reserved(); // what the ingress awaits before sending the event to a listener
    expect(store.reserved()).toBeNull();
    // Within the reserved block: no write, and nothing to wait for.
    expect(seqOf(store.append(channel, event(0)))).toBe(3);
    expect(store.reserved()).toBeNull();
    // The relay dies here, before saving event 3 (a listener may have acked it): 3 and 4 are never reused.
    // What it leaves on disk, copied to a new path (this process still holds the first file's lock).
    await copyFile(`${dir}/relay.json.journal`, `${dir}/crashed.json.journal`);
    const crashed = new ChannelStore({ ...options, file: `${dir}/crashed.json` });
    await crashed.open();
    cleanups.push(() => crashed.close());
    const again = crashed.get(channel.id)!;
    expect(again.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(seqOf(crashed.append(again, event(0)))).toBe(5);
  });

  it('keeps one unacknowledged copy per X-Service-Delivery: a retry replaces the waiting one', () => {
    const store = new ChannelStore({ file: false, clock: () => 0, maxEvents: 3, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 });
    const { channel } = store.create()!;
    for (let i = 0; i < 5; i++) expect(typeof store.append(channel, event(0, 'dlv_same'))).toBe('object');
    expect(store.unacked(channel, () => true).map((e) => [e.seq, e.deliveryId])).toEqual([[5, 'dlv_same']]);
    store.append(channel, event(0, null));
    store.append(channel, event(0, null));
    expect(store.ack(channel, 5)).toBe(true);
    // Once acknowledged, a new attempt of the same delivery is a new event again.
    expect(seqOf(store.append(channel, event(0, 'dlv_same')))).toBe(8);
    expect(store.unacked(channel, () => true).map((e) => e.seq)).toEqual([6, 7, 8]);
  });

  it('still finds the waiting copy of a delivery after the buffer dropped others for room or age (issue 23)', () => {
    let now = 0;
    const store = new ChannelStore({ file: false, clock: () => now, maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1000, scheduler: realScheduler, lazyCommitMs: 10 });
    const { channel } = store.create()!;
    store.append(channel, event(0, 'dlv_old')); // 1: dropped for its age later
    now = 600;
    for (let i = 0; i < 9; i++) store.append(channel, event(now, `dlv_${i}`)); // 2-10
    for (let seq = 2; seq <= 6; seq++) store.ack(channel, seq);
    now = 1100;
    // Full: making room drops event 1 (too old) and an acknowledged one; the index keeps the rest.
    expect(seqOf(store.append(channel, event(now, 'dlv_new')))).toBe(11);
    expect(store.unacked(channel, () => true).map((e) => e.deliveryId)).toEqual(['dlv_5', 'dlv_6', 'dlv_7', 'dlv_8', 'dlv_new']);
    // A retry of a waiting delivery still replaces its copy; one of the dropped delivery is a new event.
    expect(seqOf(store.append(channel, event(now, 'dlv_6')))).toBe(12);
    expect(seqOf(store.append(channel, event(now, 'dlv_old')))).toBe(13);
    expect(store.unacked(channel, () => true).map((e) => [e.seq, e.deliveryId])).toEqual([[7, 'dlv_5'], [9, 'dlv_7'], [10, 'dlv_8'], [11, 'dlv_new'], [12, 'dlv_6'], [13, 'dlv_old']]);
  });
});
