import { describe, expect, it } from 'vitest';
import { Accounts, type AccountTables } from '../../../src/service/core/accounts.js';
import { Credits } from '../../../src/service/core/credits.js';
import { ServiceStore } from '../../../src/service/core/store.js';

async function setup() {
  const store = await ServiceStore.open<AccountTables>({ file: false, tables: ['account', 'key'] });
  const accounts = new Accounts(store, () => 1_000);
  return { store, accounts, credits: new Credits(accounts) };
}

describe('Credits', () => {
  it('charges only what the balance covers and never goes negative; refunds and top-ups add', async () => {
    const { accounts, credits } = await setup();
    const { account } = accounts.create({ balance: 20 });
    expect(credits.charge(account, 18)).toBeNull();
    expect(credits.charge(account, 9)).toEqual({ required: 9, balance: 2 });
    expect(account.balance).toBe(2);
    credits.refund(account, 18);
    credits.topUp(account, 100);
    expect(account).toMatchObject({ balance: 120, toppedUp: true, usage: { creditsSpent: 18, creditsRefunded: 18 } });
    // A charge counts the clips it pays for before it saves the account (the count reaches the journal with it).
    expect(credits.charge(account, 20, 2)).toBeNull();
    expect(account.usage.videosCreated).toBe(2);
    expect(credits.charge(account, 1_000, 5)).toEqual({ required: 1_000, balance: 100 });
    expect(account.usage.videosCreated).toBe(2);
    expect(() => credits.charge(account, -1)).toThrow(RangeError);
    expect(() => credits.charge(account, 1.5)).toThrow(RangeError);
  });

  it('lets 50 spends race against a small balance: the sum charged never exceeds it', async () => {
    const { accounts, credits, store } = await setup();
    const { account } = accounts.create({ balance: 100 });
    const outcomes = await Promise.all(Array.from({ length: 50 }, async () => {
      await Promise.resolve();
      const shortfall = credits.charge(account, 9);
      await store.commit();
      return shortfall === null;
    }));
    expect(outcomes.filter(Boolean)).toHaveLength(11);
    expect(account.balance).toBe(1);
  });
});
