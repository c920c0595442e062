// What an outcome keeps of a handler's failure is written to the inbox and read back at the next start:
// it is a string whatever the handler threw, so an odd throw can never make the file unreadable.
import { afterEach, describe, expect, it } from 'vitest';
import { createReceiver, createTestWebhook, MemoryDeliveryStore } from '../../../src/index.js';
import { describeFailure } from '../../../src/protocol/errors.js';
import { tempDir } from '../../helpers/webhooks.js';

const SECRET = 'whsec_failure_text';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('a handler failure as an inbox record keeps it', () => {
  it('is a string for every kind of throw', () => {
    expect(describeFailure(new Error('boom'))).toBe('boom');
    expect(describeFailure(Object.assign(new Error('x'), { message: 42 }))).toBe('42');
    expect(describeFailure(Object.assign(new Error('x'), { message: undefined }))).toBe('undefined');
    expect(describeFailure(Object.create(null))).toBe('[object Object]');
    expect(describeFailure('plain')).toBe('plain');
  });

  it('leaves a file inbox that opens again after throws of every kind', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    const throws: unknown[] = [Object.assign(new Error('x'), { message: 42 }), Object.assign(new Error('x'), { message: undefined }), Object.create(null)];
    const first = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file, retries: 0 } });
    first.onError(() => undefined);
    let next = 0;
    first.onAny(() => {
      throw throws[next++];
    });
    for (let i = 0; i < throws.length; i++) {
      const hook = createTestWebhook('video.completed', { secret: SECRET });
      expect((await first.receive(Buffer.from(hook.body), hook.headers)).status).toBe(202);
      await first.inbox!.idle();
    }
    expect((await first.inbox!.list({ state: 'dead' })).map((record) => typeof record.lastError)).toEqual(['string', 'string', 'string']);
    await first.close();
    const second = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file, retries: 0 } });
    cleanups.push(() => second.close());
    expect((await second.inbox!.list({ state: 'dead' })).map((record) => record.lastError).sort()).toEqual(['42', '[object Object]', 'undefined']);
  });
});
