// RedisBus (issue 13): relay processes telling each other about listeners, live events and their answers.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../src/relay/channel-types.js';
import { realScheduler } from '../../../src/relay/heartbeat.js';
import type { Outcome } from '../../../src/relay/pending.js';
import { RedisBus } from '../../../src/relay/redis/bus.js';
import { RedisConnection } from '../../../src/relay/redis/connection.js';
import { RedisRelayStore } from '../../../src/relay/redis/store.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SILENT = { info() {}, warn() {} };
const BOUNDS = { maxEvents: 100, maxBytes: 1e7, maxAgeMs: 1e9, maxChannels: 100, maxTotalBytes: 1e9 };

/** One relay process's Redis side: its store, its bus, and what the bus handed it. */
async function relayProcess(prefix: string) {
  const process = randomBytes(4).toString('hex');
  const connection = new RedisConnection({ client: null, url: redis!.url, logger: SILENT, scheduler: realScheduler, clock: Date.now });
  const store = new RedisRelayStore({ connection, prefix, process, clock: Date.now, ...BOUNDS });
  const bus = new RedisBus({ connection, prefix, process, scheduler: realScheduler, log: () => undefined });
  const seen = { events: [] as Array<{ origin: string; channelId: string; event: StoredEvent }>, answers: [] as Array<{ channelId: string; seq: number; outcome: Outcome }>, deleted: [] as string[] };
  await store.open();
  await bus.open({
    event: (origin, channelId, event) => seen.events.push({ origin, channelId, event }),
    answered: (channelId, seq, outcome) => seen.answers.push({ channelId, seq, outcome }),
    deleted: (channelId) => seen.deleted.push(channelId),
    recovered: () => undefined,
  });
  let alive = true;
  const stop = async () => {
    if (!alive) return;
    alive = false;
    await bus.close();
    await store.close();
  };
  cleanups.push(stop);
  /** As SIGKILL would: the connections drop, the announcements stay behind in Redis. */
  const crash = async () => {
    alive = false;
    await connection.close();
  };
  return { process, store, bus, seen, stop, crash };
}

function event(eventName: string, body = Buffer.from(eventName)): Omit<StoredEvent, 'seq'> {
  return { receivedAt: Date.now(), method: 'POST', path: '/p', query: '?q', headers: ['X-Service-Event', eventName], body, eventName, deliveryId: null };
}

async function twoProcesses() {
  const prefix = `bus:${randomBytes(6).toString('hex')}:`;
  const [a, b] = [await relayProcess(prefix), await relayProcess(prefix)];
  const { id } = (await a.store.create())!;
  return { a, b, id, prefix };
}

describe.runIf(redis)('RedisBus', () => {
  it("answers filtered across processes from the other process's --events, and publishes what it wants to it", async () => {
    const { a, b, id } = await twoProcesses();
    expect(await a.store.append(id, event('video.completed'), 'none')).toMatchObject({ kind: 'stored', remote: false });
    await b.bus.watch(id, 'video.failed');
    expect(await a.store.append(id, event('video.completed'), 'none')).toEqual({ kind: 'filtered' });
    expect(await a.store.append(id, event('video.failed'), 'none')).toMatchObject({ kind: 'stored', remote: true });
    // A's own listeners are no reason to publish; B's are.
    await a.bus.watch(id, '*');
    expect(await a.store.append(id, event('video.completed'), 'wanted')).toMatchObject({ kind: 'stored', remote: false });
    a.bus.unwatch(id, '*');
    b.bus.unwatch(id, 'video.failed');
    // B withdraws on its own connection: filtered until that lands, then kept, for nobody.
    await expect.poll(async () => (await a.store.append(id, event('video.completed'), 'none')).kind).toBe('stored');
    expect(await a.store.append(id, event('video.failed'), 'none')).toMatchObject({ kind: 'stored', remote: false });
  });

  it('carries a live event to the other process and its answer back, bytes intact; its own copy counts as gone', async () => {
    const { a, b, id } = await twoProcesses();
    await b.bus.watch(id, '*');
    const body = Buffer.from([0, 1, 2, 0xff, 0x0a]);
    const appended = await a.store.append(id, event('video.completed', body), 'none');
    if (appended.kind !== 'stored') throw new Error(appended.kind);
    expect(await a.bus.publish(id, appended.event)).toBe(1);
    await expect.poll(() => b.seen.events.length).toBe(1);
    const [{ origin, channelId, event: got }] = b.seen.events as [(typeof b.seen.events)[0]];
    expect([origin, channelId]).toEqual([a.process, id]);
    expect(got).toEqual(appended.event);
    const replyBody = Buffer.from([0xfe, 0x00, 0x7b]);
    b.bus.answer(origin, id, got.seq, { kind: 'reply', frame: { type: 'reply', seq: got.seq, status: 201, headers: ['X-Local', 'yes'], body: replyBody } });
    await expect.poll(() => a.seen.answers.length).toBe(1);
    expect(a.seen.answers[0]).toEqual({ channelId: id, seq: got.seq, outcome: { kind: 'reply', frame: { type: 'reply', seq: got.seq, status: 201, headers: ['X-Local', 'yes'], body: replyBody } } });
    b.bus.answer(origin, id, got.seq, { kind: 'fail', frame: { type: 'fail', seq: got.seq, code: 'local_timeout', detail: 'slow' } });
    await expect.poll(() => a.seen.answers.at(-1)?.outcome).toEqual({ kind: 'fail', frame: { type: 'fail', seq: got.seq, code: 'local_timeout', detail: 'slow' } });

    // With listeners of its own, the publisher hears its own copy: one of the receivers it counts, answering gone.
    await a.bus.watch(id, '*');
    expect(await a.bus.publish(id, appended.event)).toBe(2);
    await expect.poll(() => a.seen.answers.at(-1)).toEqual({ channelId: id, seq: got.seq, outcome: { kind: 'gone' } });
    await expect.poll(() => b.seen.events.length).toBe(2);
    expect(a.seen.events).toEqual([]);
  });

  it("does not take a dead process's listeners for connected ones: stored rather than filtered, and its publish reaches nobody", async () => {
    const { a, id, prefix } = await twoProcesses();
    const doomed = await relayProcess(prefix);
    await doomed.bus.watch(id, 'video.failed');
    expect(await a.store.append(id, event('video.completed'), 'none')).toEqual({ kind: 'filtered' });
    await doomed.crash();
    // Its announcement has not expired, but nobody is subscribed to the channel any more.
    expect(await a.store.append(id, event('video.completed'), 'none')).toMatchObject({ kind: 'stored' });
    const gone = await relayProcess(prefix);
    await gone.bus.watch(id, '*');
    await gone.crash();
    const appended = await a.store.append(id, event('video.failed'), 'none');
    expect(appended).toMatchObject({ kind: 'stored', remote: true });
    if (appended.kind === 'stored') expect(await a.bus.publish(id, appended.event)).toBe(0);
  });

  it('tells every process that a channel was deleted, and withdraws its listeners on close', async () => {
    const { a, b, id } = await twoProcesses();
    a.bus.deleted(id);
    await expect.poll(() => b.seen.deleted).toEqual([id]);
    expect(a.seen.deleted).toEqual([id]);
    await b.bus.watch(id, '*');
    expect(await a.store.append(id, event('x'), 'none')).toMatchObject({ remote: true });
    await b.stop();
    expect(await a.store.append(id, event('x'), 'none')).toMatchObject({ remote: false });
  });
});
