// An inbox record is identified by its event key, as the receiver's dedupe is: the delivery id is not signed,
// so a different event under a delivery id already seen is a new event, not a duplicate.
import { writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createReceiver, createTestWebhook, MemoryDeliveryStore, type InboxOptions, type WebhookContext, type WebhookEvent } from '../../../src/index.js';
import { FileInboxBackend } from '../../../src/receiver/inbox/file-backend.js';
import { RedisInboxBackend } from '../../../src/receiver/inbox/redis-backend.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';
import { SECRET, tempDir } from '../../helpers/webhooks.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
let prefixes = 0;

const inboxes: Record<string, () => Promise<InboxOptions>> = {
  file: async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    return { file: tmp.file('inbox.json') };
  },
  ...(redis ? { redis: async () => ({ redis: redis.url, prefix: `record-id${++prefixes}:`, pollMs: 20 }) } : {}),
};

describe.each(Object.entries(inboxes))('the inbox record of an event (%s)', (_name, inboxOptions) => {
  it('runs a second event sent under a delivery id already seen, and takes a copy of it under another id as a duplicate', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: await inboxOptions() });
    cleanups.push(() => receiver.close());
    const ran: Array<{ id: number; deliveryId: string }> = [];
    receiver.onAny((event: WebhookEvent, { deliveryId }: WebhookContext) => void ran.push({ id: event.id, deliveryId }));
    const send = async (hook: { body: string; headers: Record<string, string> }) => {
      const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
      return { status: reply.status, body: JSON.parse(reply.body) as Record<string, unknown> };
    };
    const clip1 = createTestWebhook('video.completed', { secret: SECRET, deliveryId: 'dlv_A' });
    const clip2 = createTestWebhook('video.completed', { secret: SECRET, deliveryId: 'dlv_A' });
    const clip2Again = createTestWebhook('video.completed', { secret: SECRET, deliveryId: 'dlv_B', event: { id: clip2.event.id } });
    expect(await send(clip1)).toEqual({ status: 202, body: { received: true, queued: true } });
    expect(await send(clip2)).toEqual({ status: 202, body: { received: true, queued: true } });
    expect(await send(clip2Again)).toEqual({ status: 200, body: { received: true, duplicate: true } });
    await expect.poll(async () => (await receiver.inbox!.stats()).done, { timeout: 5_000, interval: 10 }).toBe(2);
    await receiver.inbox!.idle();
    expect(ran.sort((a, b) => a.id - b.id)).toEqual([{ id: clip1.event.id, deliveryId: 'dlv_A' }, { id: clip2.event.id, deliveryId: 'dlv_A' }].sort((a, b) => a.id - b.id));
    // get() takes the record's id, its event key; the delivery that brought it is its own field.
    const key = `e:video.completed:${clip2.event.id}`;
    expect(await receiver.inbox!.get(key)).toMatchObject({ id: key, deliveryId: 'dlv_A', state: 'done', keys: [key] });
    expect(await receiver.inbox!.get('dlv_A')).toBeUndefined();
  });
});

describe('an inbox stored before records carried their delivery id (keyed by it)', () => {
  const oldRecord = (id: string, clip: number) => ({
    id,
    name: 'video.completed',
    body: JSON.stringify(createTestWebhook('video.completed', { secret: SECRET, event: { id: clip } }).event),
    keys: [`e:video.completed:${clip}`],
    source: 'webhook',
    state: 'pending',
    attempts: 0,
    receivedAt: 1_700_000_000_000,
    nextAttemptAt: 1_700_000_000_000,
    finishedAt: null,
    lastError: null,
  });

  it('a file opens, and its pending event runs with its delivery id taken from the record id', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    await writeFile(file, JSON.stringify({ version: 1, records: [oldRecord('dlv_old', 41)] }));
    await writeFile(`${file}.journal`, `${JSON.stringify(oldRecord('dlv_journal', 42))}\n`);
    const backend = new FileInboxBackend({ file, keepDone: 10, keepDoneMs: 60_000, clock: Date.now });
    await backend.open();
    expect(await backend.get('dlv_old')).toMatchObject({ id: 'dlv_old', deliveryId: 'dlv_old' });
    expect(await backend.get('dlv_journal')).toMatchObject({ id: 'dlv_journal', deliveryId: 'dlv_journal' });
    await backend.close();

    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file } });
    cleanups.push(() => receiver.close());
    const ran: Array<[number, string]> = [];
    receiver.onAny((event, { deliveryId }) => void ran.push([event.id, deliveryId]));
    await expect.poll(async () => (await receiver.inbox!.stats()).done, { timeout: 5_000, interval: 10 }).toBe(2);
    expect(ran.sort()).toEqual([[41, 'dlv_old'], [42, 'dlv_journal']]);
  });

  it.skipIf(!redis)('a Redis hash without the field reads its delivery id from the record id', async () => {
    const prefix = `record-id-old${++prefixes}:`;
    const client = new Redis(redis!.url);
    cleanups.push(() => client.quit());
    const record = oldRecord('dlv_old', 43);
    const fields = Object.entries(record).flatMap(([field, value]) => [field, field === 'keys' ? JSON.stringify(value) : value === null ? '' : String(value)]);
    await client.hset(`${prefix}r:dlv_old`, 'bytes', Buffer.byteLength(record.body), ...fields);
    await client.zadd(`${prefix}pending`, record.nextAttemptAt, 'dlv_old');
    const backend = new RedisInboxBackend({ redis: redis!.url, prefix, keepDone: 10, keepDoneMs: 60_000 });
    cleanups.push(() => backend.close());
    await backend.open();
    expect(await backend.get('dlv_old')).toMatchObject({ id: 'dlv_old', deliveryId: 'dlv_old' });
    const [claimed] = await backend.claim(Date.now(), Date.now() + 1000, 'w', 1);
    expect(claimed).toMatchObject({ id: 'dlv_old', deliveryId: 'dlv_old', attempts: 1 });
  });
});
