// The delivery records on Redis (issue 23): a write gives back the record as Redis holds it without parsing
// it back, and a change this process already holds is not parsed at all.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jobIdOf, parseChange, recordKeys, RedisRecordStore, type StoredRecord } from '../../../src/emitter/bullmq/record-store.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';

const redis = redisAvailable() ? await startRedis() : null;
const client = redis ? new Redis(redis.url) : null;
afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

function fresh(id: string): Omit<StoredRecord, 'v' | 'seq'> {
  return {
    id, gen: 0, job: jobIdOf(id, 0), url: 'https://example.com/hook', secret: 'whsec_kept_apart', event: 'video.completed', state: 'pending', retry: true,
    createdAt: 1_000, nextAttemptAt: 1_000, round: 0, attempts: [], payload: JSON.stringify({ event: 'video.completed', id: 7, prompt: 'a fox "in" the snow \u2028' }),
  };
}

describe.runIf(redis)('RedisRecordStore', () => {
  it('gives back from create, begin and update the record a fresh read of Redis gives, secret blank', async () => {
    const store = new RedisRecordStore(client!, recordKeys('test', `q${Date.now()}`), 10);
    const read = async (id: string) => (await store.loadAll()).find((record) => record.id === id);
    const created = await store.create(fresh('dlv_one'));
    expect(created.created).toBe(true);
    expect(created.record).toEqual(await read('dlv_one'));
    expect(created.record).toMatchObject({ v: 1, secret: '' });
    const second = await store.create(fresh('dlv_two'));
    expect(second.record.seq).toBe(created.record.seq + 1);
    const begun = await store.begin('dlv_one', 'dlv_one');
    expect(begun!.secret).toBe('whsec_kept_apart');
    const attempt = { at: 2_000, status: 200, error: null, latencyMs: 3, response: '{"received":true}' };
    const done = await store.update('dlv_one', (record) => ({ ...record, attempts: record.attempts.concat([attempt]), state: 'delivered', nextAttemptAt: null }), begun);
    expect(done!.record).toEqual(await read('dlv_one'));
    expect(done!.record).toMatchObject({ v: 3, state: 'delivered', secret: '' });
    // Created again under the same id: nothing new, and what Redis holds comes back.
    const again = await store.create(fresh('dlv_one'));
    expect(again).toMatchObject({ created: false, record: { v: 3, state: 'delivered' } });
  });

  it('gives back what Redis holds when another write came between: the change is made to that one', async () => {
    const store = new RedisRecordStore(client!, recordKeys('test', `q${Date.now()}b`), 10);
    const { record: stale } = await store.create(fresh('dlv_raced'));
    // Another process writes first: this one's copy is a version behind.
    await store.update('dlv_raced', (record) => ({ ...record, round: 1 }), stale);
    const done = await store.update('dlv_raced', (record) => ({ ...record, state: 'failed', nextAttemptAt: null }), stale);
    expect(done).toMatchObject({ changed: true, before: { v: 2, round: 1 }, record: { v: 3, round: 1, state: 'failed' } });
    expect(done!.record).toEqual((await store.loadAll())[0]);
  });

  it('publishes every write with the head parseChange reads, so a process knows its own echo without parsing it', async () => {
    const keys = recordKeys('test', `q${Date.now()}c`);
    const store = new RedisRecordStore(client!, keys, 10);
    const subscriber = new Redis(redis!.url);
    const messages: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => messages.push(message));
    await subscriber.subscribe(keys.channel);
    try {
      const created = await store.create({ ...fresh('dlv_echo'), gen: 1, job: jobIdOf('dlv_echo', 1) });
      const begun = await store.begin('dlv_echo', 'dlv_echo.1');
      const done = await store.update('dlv_echo', (record) => ({ ...record, state: 'delivered', nextAttemptAt: null }), begun);
      const written = [created.record, begun!, done!.record];
      await expect.poll(() => messages.length).toBe(3);
      messages.forEach((message, i) => {
        const heads: unknown[] = [];
        expect(parseChange(message, (head) => (heads.push(head), true))).toEqual({ record: null, gone: [] });
        expect(heads).toEqual([{ v: written[i]!.v, job: 'dlv_echo.1' }]);
        // Another process, which does not hold it, gets the record as written.
        expect(parseChange(message, () => false).record).toEqual({ ...written[i], secret: '' });
      });
    } finally {
      subscriber.disconnect();
    }
  });
});

describe('parseChange', () => {
  const stored = '{"v":4,"seq":9,"state":"delivered","job":"dlv_x.1","nextAttemptAt":null,"id":"dlv_x","gen":1}';
  it('does not parse a change the process already holds, but still forgets the ids it names', () => {
    const heads: unknown[] = [];
    // A torn record: parsing it would throw, so passing shows it was never parsed.
    const skipped = parseChange(`${stored.slice(0, -5)}\ndlv_a,dlv_b`, (head) => (heads.push(head), true));
    expect(skipped).toEqual({ record: null, gone: ['dlv_a', 'dlv_b'] });
    expect(heads).toEqual([{ v: 4, job: 'dlv_x.1' }]);
    expect(parseChange(`${stored}\n`, () => false).record).toMatchObject({ v: 4, id: 'dlv_x', secret: '' });
    expect(() => parseChange(`${stored.slice(0, -5)}\n`, () => false)).toThrow();
  });
});
