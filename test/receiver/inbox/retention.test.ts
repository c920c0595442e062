// A file inbox bounds its dead events by keepDead and keepDeadMs; each one dropped is told to
// inbox.onDeadDropped (by default a Node warning), and pending events are never dropped.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createReceiver, createTestWebhook, MemoryDeliveryStore, type InboxRecord } from '../../../src/index.js';
import { tempDir } from '../../helpers/webhooks.js';

const SECRET = 'whsec_retention';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  while (cleanups.length) await cleanups.pop()!();
});

async function app(inbox: Record<string, unknown>) {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file: tmp.file('inbox.json'), retries: 0, ...inbox } });
  cleanups.push(() => receiver.close());
  receiver.onError(() => undefined);
  receiver.onAny((event) => {
    if (event.event === 'video.failed') throw new Error('cannot refund');
  });
  const send = async (name: 'video.completed' | 'video.failed') => {
    const hook = createTestWebhook(name, { secret: SECRET });
    expect((await receiver.receive(Buffer.from(hook.body), hook.headers)).status).toBe(202);
    await receiver.inbox!.idle();
    // A record is named by its event key; the delivery that brought it is kept beside.
    return { id: `e:${name}:${(JSON.parse(hook.body) as { id: number }).id}`, deliveryId: hook.deliveryId };
  };
  return { receiver, send };
}

describe('inbox.keepDead', () => {
  it('drops the oldest dead event past keepDead and tells onDeadDropped', async () => {
    const dropped: InboxRecord[] = [];
    const { receiver, send } = await app({ keepDead: 1, onDeadDropped: (record: InboxRecord) => void dropped.push(record) });
    const first = await send('video.failed');
    const second = await send('video.failed');
    expect(dropped).toEqual([expect.objectContaining({ id: first.id, deliveryId: first.deliveryId, state: 'dead', lastError: 'cannot refund', body: expect.stringContaining('video.failed') })]);
    expect((await receiver.inbox!.list({ state: 'dead' })).map((r) => r.id)).toEqual([second.id]);
  });

  it('by default, each dropped dead event is a Node warning naming it', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { send } = await app({ keepDead: 0 });
    const { id, deliveryId } = await send('video.failed');
    expect(warn).toHaveBeenCalledWith(expect.stringContaining(`dropped dead event ${id} (video.failed, delivery ${deliveryId},`), { code: 'CLIPHOOK_INBOX_DEAD_DROPPED' });
  });

  it('names a bad option at construction', async () => {
    for (const [inbox, message] of [
      [{ keepDead: -1 }, /`inbox.keepDead` to be a non-negative integer/],
      [{ keepDeadMs: Number.NaN }, /`inbox.keepDeadMs` to be a non-negative number/],
      [{ onDeadDropped: 'log' }, /`inbox.onDeadDropped` to be a function/],
    ] as const) {
      expect(() => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: inbox as never })).toThrow(message);
    }
  });
});
