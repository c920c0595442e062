// Issue 20 item 9: a command whose write fails leaves no trace. The store records what each unit (one
// request) changed and takes it back onto the rows as they are now; these are its rules, in memory.
import { describe, expect, it } from 'vitest';
import { revertInPlace, sameJson } from '../../../src/service/core/rollback.js';
import { ServiceStore, StoreWriteError } from '../../../src/service/core/store.js';

interface Account {
  id: number;
  balance: number;
  usage: { spent: number; refunded: number };
  note: string;
}
interface Video {
  id: number;
  status: string;
}
type Tables = { account: Account; video: Video };

const open = () => ServiceStore.open<Tables>({ file: false, tables: ['account', 'video'] });
const fails = () => {
  throw new StoreWriteError(new Error('EROFS'));
};

describe('revertInPlace', () => {
  it('puts back what is still as the change left it, moves numbers back by the change alone, and keeps newer values', () => {
    const before = { balance: 100, usage: { spent: 0, refunded: 0 }, note: 'a', tags: ['x'] };
    const after = { balance: 91, usage: { spent: 9, refunded: 0 }, note: 'b', tags: ['x', 'y'] };
    // Since the change: a refund of 5 (balance and usage), and the note changed by someone else.
    const live: Record<string, unknown> = { balance: 96, usage: { spent: 9, refunded: 5 }, note: 'c', tags: ['x', 'y'], extra: 1 };
    revertInPlace(live, before, after);
    expect(live).toEqual({ balance: 105, usage: { spent: 0, refunded: 5 }, note: 'c', tags: ['x'], extra: 1 });
    const added: Record<string, unknown> = { a: 1, b: 2 };
    revertInPlace(added, { a: 1 }, { a: 1, b: 2 });
    expect(added).toEqual({ a: 1 });
    expect(sameJson({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(false);
  });
});

describe('ServiceStore.unit', () => {
  it('takes a failed unit back whole: rows it changed, made and removed; a change made meanwhile by someone else stands', async () => {
    const store = await open();
    const accounts = store.table('account');
    const videos = store.table('video');
    const account = accounts.put({ id: 1, balance: 100, usage: { spent: 0, refunded: 0 }, note: '' });
    videos.put({ id: 1, status: 'done' });
    let rolledBack = 0;
    store.onRollback(() => void rolledBack++);
    let meanwhileDone!: () => void;
    const meanwhile = new Promise<void>((resolve) => (meanwhileDone = resolve));
    const unit = store.unit(async () => {
      account.balance -= 9;
      account.usage.spent += 9;
      accounts.put(account);
      videos.put({ id: store.nextId('video'), status: 'pending' });
      videos.remove(1);
      await meanwhile;
      fails();
    });
    // Meanwhile, outside the unit: a refund of 4.
    account.balance += 4;
    account.usage.refunded += 4;
    accounts.put(account);
    meanwhileDone();
    await expect(unit).rejects.toBeInstanceOf(StoreWriteError);
    expect(account).toEqual({ id: 1, balance: 104, usage: { spent: 0, refunded: 4 }, note: '' });
    expect([...videos.values()]).toEqual([{ id: 1, status: 'done' }]);
    expect(rolledBack).toBe(1);
  });

  it('keeps a unit that ends well, and what `background` changes inside a failing one', async () => {
    const store = await open();
    const videos = store.table('video');
    expect(await store.unit(() => videos.put({ id: 1, status: 'pending' }))).toEqual({ id: 1, status: 'pending' });
    await expect(
      store.unit(() => {
        videos.put({ id: 2, status: 'pending' });
        store.background(() => videos.put({ id: 3, status: 'clock' }));
        fails();
      }),
    ).rejects.toThrow(StoreWriteError);
    expect([...videos.values()].map((video) => video.id)).toEqual([1, 3]);
  });

  it('a unit inside another is taken back on its own; the outer one goes on', async () => {
    const store = await open();
    const videos = store.table('video');
    const answer = await store.unit(async () => {
      videos.put({ id: 1, status: 'outer' });
      const inner = await store.unit(() => {
        videos.put({ id: 2, status: 'inner' });
        fails();
      }).catch((error: Error) => error.name);
      return inner;
    });
    expect(answer).toBe('StoreWriteError');
    expect([...videos.values()]).toEqual([{ id: 1, status: 'outer' }]);
  });
});
