import { describe, expect, it } from 'vitest';
import { ContextSlot } from '../../../src/service/core/context.js';

describe('ContextSlot (one AsyncLocalStorage for every slot)', () => {
  it('carries a value through awaits and timers, innermost run first, undefined outside', async () => {
    const slot = new ContextSlot<string>();
    expect(slot.get()).toBeUndefined();
    await slot.run('outer', async () => {
      await Promise.resolve();
      expect(slot.get()).toBe('outer');
      await slot.run('inner', async () => {
        await new Promise((resolve) => setImmediate(resolve));
        expect(slot.get()).toBe('inner');
      });
      expect(slot.get()).toBe('outer');
      // `undefined` reads as outside every run (the store's `background`).
      slot.run(undefined, () => expect(slot.get()).toBeUndefined());
    });
    expect(slot.get()).toBeUndefined();
  });

  it('sets one slot and keeps the others: the clock\'s account survives the store\'s unit, and the other way round', async () => {
    const account = new ContextSlot<number>();
    const unit = new ContextSlot<{ id: string }>();
    const seen: unknown[] = [];
    await account.run(7, () =>
      unit.run({ id: 'u1' }, async () => {
        await Promise.resolve();
        seen.push(account.get(), unit.get()?.id);
        await account.run(8, async () => {
          await Promise.resolve();
          seen.push(account.get(), unit.get()?.id);
        });
        unit.run(undefined, () => seen.push(account.get(), unit.get()));
      }),
    );
    expect(seen).toEqual([7, 'u1', 8, 'u1', 7, undefined]);
  });

  it('keeps concurrent runs apart', async () => {
    const slot = new ContextSlot<number>();
    const read = (value: number) =>
      slot.run(value, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return slot.get();
      });
    expect(await Promise.all([read(1), read(2), read(3)])).toEqual([1, 2, 3]);
  });
});

describe('ContextSlot re-entered', () => {
  it('keeps every slot right through a loop that re-enters a run on each turn (a poller calling clock.as forever)', async () => {
    const account = new ContextSlot<number>();
    const unit = new ContextSlot<string>();
    // Each turn runs inside the last one's context: with frames chained, this made a chain 20,000 long that
    // every lookup of `unit` walked; a frame is flat, one entry per slot set.
    const poll = (left: number): Promise<[number | undefined, string | undefined]> =>
      left === 0 ? Promise.resolve([account.get(), unit.get()]) : account.run(left, () => new Promise((resolve) => setImmediate(() => resolve(poll(left - 1)))));
    expect(await unit.run('outer', () => poll(20_000))).toEqual([1, 'outer']);
    // Nested synchronously, innermost wins and unwinding restores each level.
    const nest = (left: number): Array<number | string | undefined> => (left === 0 ? [account.get(), unit.get()] : account.run(left, () => unit.run(`u${left}`, () => nest(left - 1))));
    expect(nest(1_000)).toEqual([1, 'u1']);
    expect([account.get(), unit.get()]).toEqual([undefined, undefined]);
  });
});
