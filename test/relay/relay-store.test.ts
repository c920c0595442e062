// The RelayStore contract (issue 13): every backend behind the seam passes the same tests. The file store's
// own details (its journal, crashes, compaction) are in channels.test.ts and channel-file.test.ts.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ChannelStore } from '../../src/relay/channels.js';
import type { StoredEvent } from '../../src/relay/channel-types.js';
import { FileRelayStore } from '../../src/relay/file-relay-store.js';
import { realScheduler } from '../../src/relay/heartbeat.js';
import { RedisConnection } from '../../src/relay/redis/connection.js';
import { RedisRelayStore } from '../../src/relay/redis/store.js';
import type { AppendResult, RelayStore } from '../../src/relay/relay-store.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { testdir } from './fixtures.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Bounds {
  maxEvents: number;
  maxBytes: number;
  maxAgeMs: number;
  maxChannels: number;
  maxTotalBytes: number;
}

const DEFAULTS: Bounds = { maxEvents: 10, maxBytes: 1e6, maxAgeMs: 1000, maxChannels: 100, maxTotalBytes: 1e9 };
const SILENT = { info() {}, warn() {} };

interface Backend {
  name: string;
  /** A store with these bounds, and a second one over the same data: the store reopened, or another relay process. */
  make(bounds: Bounds, clock: () => number): Promise<{ store: RelayStore; again(): Promise<RelayStore> }>;
}

async function opened(store: RelayStore): Promise<RelayStore> {
  await store.open();
  cleanups.push(() => store.close());
  return store;
}

const fileBackend: Backend = {
  name: 'file',
  async make({ maxEvents, maxBytes, maxAgeMs, maxChannels, maxTotalBytes }, clock) {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const options = { file: `${dir}/relay.json`, clock, maxEvents, maxBytes, maxAgeMs, maxChannels, maxTotalBytes, scheduler: realScheduler, lazyCommitMs: 10, seqBlock: 4 };
    const store = await opened(new FileRelayStore(new ChannelStore(options)));
    // One process per data file: the first lets go before the second opens it, as a restarted relay would.
    return { store, again: async () => (await store.close(), opened(new FileRelayStore(new ChannelStore(options)))) };
  },
};

const redisBackend: Backend = {
  name: 'redis',
  async make(bounds, clock) {
    const prefix = `contract:${randomBytes(6).toString('hex')}:`;
    const make = () =>
      opened(new RedisRelayStore({ connection: new RedisConnection({ client: null, url: redis!.url, logger: SILENT, scheduler: realScheduler, clock }), prefix, process: randomBytes(4).toString('hex'), clock, ...bounds }));
    const store = await make();
    return { store, again: make };
  },
};

const backends = redis ? [fileBackend, redisBackend] : [fileBackend];

function event(receivedAt: number, deliveryId: string | null = null, body: Buffer = Buffer.alloc(0)): Omit<StoredEvent, 'seq'> {
  return { receivedAt, method: 'POST', path: '/x', query: '?a=1', headers: ['X-Service-Delivery', deliveryId ?? ''], body, eventName: 'video.completed', deliveryId };
}

/** A body that counts `base64Bytes` toward the bounds (bodies count as base64, as the data file keeps them). */
const sized = (base64Bytes: number) => Buffer.alloc((base64Bytes / 4) * 3, 7);

const seqOf = (result: AppendResult) => (result.kind === 'stored' ? result.event.seq : result.kind === 'full' ? result.reason : result.kind);
const all = () => true;

describe.each(backends)('RelayStore contract: $name', (backend) => {
  async function setup(bounds: Partial<Bounds> = {}, clock: () => number = () => 0) {
    return backend.make({ ...DEFAULTS, ...bounds }, clock);
  }

  it('makes unguessable ids and checks the token against what it keeps', async () => {
    const { store } = await setup();
    const { id, token } = (await store.create())!;
    expect(Buffer.from(id, 'base64url').length * 8).toBeGreaterThanOrEqual(128);
    expect(await store.has(id)).toBe(true);
    expect(await store.check(id, token)).toBe('ok');
    expect(await store.check(id, `${token}x`)).toBe('invalid_token');
    expect(await store.check(id, undefined)).toBe('invalid_token');
    expect(await store.check('missing', token)).toBe('not_found');
    expect(await store.has('missing')).toBe(false);
    expect(await store.append('missing', event(0), 'none')).toEqual({ kind: 'not_found' });
  });

  it('numbers events from 1, refuses past the count rather than drop an unacknowledged one, and drops by age', async () => {
    let now = 0;
    const { store } = await setup({ maxEvents: 3 }, () => now);
    const { id } = (await store.create())!;
    const seqs = [];
    for (let i = 0; i < 3; i++) seqs.push(seqOf(await store.append(id, event(now), 'none')));
    expect(seqs).toEqual([1, 2, 3]);
    expect(seqOf(await store.append(id, event(now), 'none'))).toBe('channel_events');
    await store.ack(id, 1);
    expect(seqOf(await store.append(id, event(now), 'none'))).toBe(4);
    expect((await store.unacked(id, all)).map((e) => e.seq)).toEqual([2, 3, 4]);
    now = 5000;
    expect(await store.unacked(id, all)).toEqual([]);
    // Numbers never go back, even with the buffer empty.
    expect(seqOf(await store.append(id, event(now), 'none'))).toBe(5);
  });

  it('bounds the body bytes per channel, dropping acknowledged events first', async () => {
    const { store } = await setup({ maxEvents: 100, maxBytes: 100 });
    const { id } = (await store.create())!;
    expect(seqOf(await store.append(id, event(0, null, sized(60)), 'none'))).toBe(1);
    expect(seqOf(await store.append(id, event(0, null, sized(60)), 'none'))).toBe('channel_bytes');
    await store.ack(id, 1);
    expect(seqOf(await store.append(id, event(0, null, sized(60)), 'none'))).toBe(2);
    expect(await store.find(id, '1')).toBeUndefined();
    expect((await store.stats()).bufferedBytes).toBe(60);
  });

  it('bounds the bytes across channels, making room from acknowledged events of any channel', async () => {
    const { store } = await setup({ maxTotalBytes: 3000 });
    const a = (await store.create())!;
    const b = (await store.create())!;
    expect(seqOf(await store.append(a.id, event(0, 'a1', sized(1200)), 'none'))).toBe(1);
    expect(seqOf(await store.append(b.id, event(0, 'b1', sized(1200)), 'none'))).toBe(1);
    expect(seqOf(await store.append(b.id, event(0, 'b2', sized(800)), 'none'))).toBe('relay_bytes');
    await store.ack(a.id, 1);
    expect(seqOf(await store.append(b.id, event(0, 'b2', sized(800)), 'none'))).toBe(2);
    expect(await store.stats()).toEqual({ channels: 2, bufferedBytes: 2000 });
    expect(await store.find(a.id, 'a1')).toBeUndefined();
  });

  it('holds at most maxChannels channels', async () => {
    const { store } = await setup({ maxChannels: 2 });
    expect(await store.create()).not.toBeNull();
    expect(await store.create()).not.toBeNull();
    expect(await store.create()).toBeNull();
  });

  it('keeps one unacknowledged copy per X-Service-Delivery: a retry replaces the waiting one', async () => {
    const { store } = await setup({ maxEvents: 3 });
    const { id } = (await store.create())!;
    for (let i = 0; i < 5; i++) expect((await store.append(id, event(0, 'dlv_same'), 'none')).kind).toBe('stored');
    expect((await store.unacked(id, all)).map((e) => [e.seq, e.deliveryId])).toEqual([[5, 'dlv_same']]);
    await store.append(id, event(0, null), 'none');
    await store.append(id, event(0, null), 'none');
    await store.ack(id, 5);
    await store.ack(id, 5); // twice changes nothing
    // Once acknowledged, a new attempt of the same delivery is a new event again.
    expect(seqOf(await store.append(id, event(0, 'dlv_same'), 'none'))).toBe(8);
    expect((await store.unacked(id, all)).map((e) => e.seq)).toEqual([6, 7, 8]);
    expect((await store.unacked(id, (e) => e.deliveryId === null)).map((e) => e.seq)).toEqual([6, 7]);
  });

  it('finds an event by sequence number or delivery id, bytes intact, from a reopened store or another process, and numbers on', async () => {
    const { store, again } = await setup();
    const { id, token } = (await store.create())!;
    const body = Buffer.from([0, 255, 10, 13, 0xe2, 0x80, 0x94, 0xf0]);
    await store.append(id, event(0, 'dlv_a', body), 'none');
    await store.append(id, event(0, 'dlv_b'), 'none');
    await store.append(id, event(0, 'dlv_a', Buffer.from('second copy')), 'none');
    await store.ack(id, 3);
    const other = await again();
    expect(await other.check(id, token)).toBe('ok');
    expect(await other.find(id, '2')).toMatchObject({ seq: 2, deliveryId: 'dlv_b', method: 'POST', path: '/x', query: '?a=1', headers: ['X-Service-Delivery', 'dlv_b'] });
    // The latest copy of a delivery, acknowledged or not: what --replay resends.
    expect((await other.find(id, 'dlv_a'))?.body.toString()).toBe('second copy');
    expect((await other.find(id, '1'))?.body).toBeUndefined(); // replaced by the retry
    expect(await other.find(id, 'dlv_none')).toBeUndefined();
    expect((await other.unacked(id, all)).map((e) => e.seq)).toEqual([2]);
    const appended = await other.append(id, event(0, 'dlv_c', body), 'none');
    expect(seqOf(appended)).toBeGreaterThanOrEqual(4);
    expect((await other.find(id, 'dlv_c'))?.body.equals(body)).toBe(true);
  });

  it('answers filtered, keeping nothing, when the listeners it knows of all leave the event out', async () => {
    const { store } = await setup();
    const { id } = (await store.create())!;
    expect(await store.append(id, event(0), 'filtered')).toEqual({ kind: 'filtered' });
    expect(await store.unacked(id, all)).toEqual([]);
    expect(seqOf(await store.append(id, event(0), 'wanted'))).toBe(1);
  });

  it('deletes a channel with its events and their bytes', async () => {
    const { store } = await setup();
    const a = (await store.create())!;
    const b = (await store.create())!;
    expect(await store.has(a.id)).toBe(true);
    await store.append(a.id, event(0, 'x', sized(400)), 'none');
    await store.append(b.id, event(0, 'y', sized(800)), 'none');
    await store.ack(a.id, 1);
    expect(await store.delete(a.id)).toBe('deleted');
    expect(await store.has(a.id)).toBe(false);
    expect(await store.append(a.id, event(0), 'none')).toEqual({ kind: 'not_found' });
    expect(await store.delete(a.id)).toBe('not_found');
    expect(await store.check(a.id, a.token)).toBe('not_found');
    expect(await store.unacked(a.id, all)).toEqual([]);
    expect(await store.find(a.id, '1')).toBeUndefined();
    expect(await store.stats()).toEqual({ channels: 1, bufferedBytes: 800 });
  });

  it('keeps an event once keep() resolves, and is healthy', async () => {
    const { store, again } = await setup();
    const { id } = (await store.create())!;
    const appended = await store.append(id, event(0, 'dlv_k'), 'none');
    if (appended.kind !== 'stored') throw new Error(appended.kind);
    await store.keep(id, appended.event);
    expect(store.health).toEqual({ ok: true });
    expect((await (await again()).unacked(id, all)).map((e) => e.deliveryId)).toEqual(['dlv_k']);
  });
});
