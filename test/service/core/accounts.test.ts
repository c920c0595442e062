import { describe, expect, it, vi } from 'vitest';
import { Accounts, isValidToken, type AccountTables } from '../../../src/service/core/accounts.js';
import { ServiceStore, StoreWriteError } from '../../../src/service/core/store.js';

async function setup() {
  const store = await ServiceStore.open<AccountTables>({ file: false, tables: ['account', 'key'] });
  const accounts = new Accounts(store, () => 1_000);
  return { store, accounts };
}

describe('Accounts and keys (spec 5)', () => {
  it('authenticates a bearer key; a missing or malformed header and an unknown or revoked key are told apart', async () => {
    const { accounts } = await setup();
    const { account, key } = accounts.create({ balance: 1000, token: 'sk_test_1234', webhookSecret: 'whsec_x' });
    expect(accounts.authenticate('Bearer sk_test_1234')).toEqual({ account, key });
    expect(accounts.authenticate('bearer sk_test_1234')).toEqual({ account, key });
    for (const header of [undefined, '', 'sk_test_1234', 'Basic abc', 'Bearer', 'Bearer a b']) expect(accounts.authenticate(header)).toBe('invalid_auth_header');
    expect(accounts.authenticate('Bearer sk_nope_1234')).toBe('invalid_api_key');
    accounts.revoke(key);
    expect(accounts.authenticate('Bearer sk_test_1234')).toBe('invalid_api_key');
  });

  it('keeps keys across a reload of the store, revoked ones still refused', async () => {
    const { store, accounts } = await setup();
    const { account } = accounts.create({ balance: 300 });
    const second = accounts.addKey(account);
    accounts.revoke(accounts.keysOf(account.id)[0]!);
    const reloaded = new Accounts(store, () => 2_000);
    expect(reloaded.authenticate(`Bearer ${second.token}`)).toMatchObject({ key: { id: second.id } });
    expect(reloaded.first()?.key.id).toBe(second.id);
  });

  it('files each key\'s secrets with the KeySecrets the composition root hands in (the journal\'s index)', async () => {
    // Issue 31 item 5: core imports nothing of testing/; the SecretIndex comes in as a KeySecrets.
    const store = await ServiceStore.open<AccountTables>({ file: false, tables: ['account', 'key'] });
    const filed = new Map<string, unknown[]>();
    const secrets = { set: (group: string, values: Iterable<unknown>) => void filed.set(group, [...values]), delete: (group: string) => filed.delete(group), groups: () => filed.keys() };
    const accounts = new Accounts(store, () => 1_000, secrets);
    const { key } = accounts.create({ balance: 0, token: 'sk_test_secrets1', webhookSecret: 'whsec_secrets_1' });
    expect(filed.get(key.id)).toEqual(expect.arrayContaining(['sk_test_secrets1', 'whsec_secrets_1']));
    expect(new Accounts(store, () => 1_000).secrets.groups()).toEqual([]); // without one, nothing is filed
  });

  it('rotates a token in place and refuses a token in use', async () => {
    const { accounts } = await setup();
    const { key } = accounts.create({ balance: 0 });
    accounts.update(key, { token: 'sk_new_token_1' });
    expect(accounts.authenticate('Bearer sk_new_token_1')).not.toBe('invalid_api_key');
    const other = accounts.create({ balance: 0 });
    expect(() => accounts.update(other.key, { token: 'sk_new_token_1' })).toThrow(TypeError);
    // Issue 20 item 6: a key chosen by hand must be long enough not to be guessed.
    expect(isValidToken('sk_short')).toBe(false);
    expect(isValidToken('sk_twenty_three_chars_x')).toBe(false);
    expect(isValidToken('sk_twenty_four_chars_xyz')).toBe(true);
    expect(isValidToken('has space in it, and long enough')).toBe(false);
  });
});

describe('Accounts: lookups that do not grow with the keys ever made (issue 29 follow-up item 1)', () => {
  it('keysOf and ofSecret read no key row of other accounts, with 2,000 revoked keys made before', async () => {
    const { store, accounts } = await setup();
    const { account: busy } = accounts.create({ balance: 0 });
    for (let i = 0; i < 2_000; i++) accounts.revoke(accounts.addKey(busy));
    const { account, key } = accounts.create({ balance: 0, webhookSecret: 'whsec_mine_0123456789' });
    const values = vi.spyOn(store.table('key'), 'values');
    expect(accounts.keysOf(account.id).map((k) => k.id)).toEqual([key.id]);
    expect(accounts.ofSecret('whsec_mine_0123456789')).toBe(account.id);
    expect(accounts.ofSecret('whsec_nobody_0123456789')).toBeUndefined();
    expect(accounts.keysOf(busy.id)).toHaveLength(2_001);
    expect(values).not.toHaveBeenCalled();
  });

  it('keeps both indexes in step with keys added, rotated, removed and taken back', async () => {
    const { store, accounts } = await setup();
    const { account, key } = accounts.create({ balance: 0, webhookSecret: 'whsec_first_0123456789' });
    const second = accounts.addKey(account, { webhookSecret: 'whsec_second_0123456789' });
    expect(accounts.keysOf(account.id).map((k) => k.id)).toEqual([key.id, second.id]);
    expect(accounts.ofSecret('whsec_second_0123456789')).toBe(account.id);
    // A rotation (commands.ts): the secret before it still finds the account, the one before that does not.
    key.previousWebhookSecret = key.webhookSecret;
    accounts.update(key, { webhookSecret: 'whsec_rotated_0123456789' });
    key.previousWebhookSecret = key.webhookSecret;
    accounts.update(key, { webhookSecret: 'whsec_again_0123456789' });
    expect(accounts.ofSecret('whsec_again_0123456789')).toBe(account.id);
    expect(accounts.ofSecret('whsec_rotated_0123456789')).toBe(account.id);
    expect(accounts.ofSecret('whsec_first_0123456789')).toBeUndefined();
    // A revoked key still signs its clips' webhooks.
    accounts.revoke(second);
    expect(accounts.ofSecret('whsec_second_0123456789')).toBe(account.id);
    // Rows removed beside the owner (a reset's wipe): the table's indexes follow at once, with no resync (issue 31, s5a).
    const other = accounts.create({ balance: 0, webhookSecret: 'whsec_other_0123456789' });
    store.table('key').remove(other.key.id);
    expect(accounts.keysOf(other.account.id)).toEqual([]);
    expect(accounts.ofSecret('whsec_other_0123456789')).toBeUndefined();
    expect(accounts.remove(account.id)).toBe(true);
    expect(accounts.keysOf(account.id)).toEqual([]);
    expect(accounts.ofSecret('whsec_again_0123456789')).toBeUndefined();
    expect(accounts.ofSecret('whsec_second_0123456789')).toBeUndefined();
  });

  it('a unit taken back takes its keys, rotations and revocations out of every lookup and of the secrets, with nothing rebuilt (issue 31, s5a)', async () => {
    const store = await ServiceStore.open<AccountTables>({ file: false, tables: ['account', 'key'] });
    const filed = new Map<string, unknown[]>();
    const secrets = { set: (group: string, values: Iterable<unknown>) => void filed.set(group, [...values]), delete: (group: string) => filed.delete(group), groups: () => filed.keys() };
    const accounts = new Accounts(store, () => 1_000, secrets);
    const { account, key } = accounts.create({ balance: 0, token: 'sk_kept_token_0123456789', webhookSecret: 'whsec_kept_0123456789' });
    let added: string | undefined;
    await expect(store.unit(() => {
      added = accounts.addKey(account, { token: 'sk_added_token_0123456789', webhookSecret: 'whsec_added_0123456789' }).id;
      key.previousWebhookSecret = key.webhookSecret;
      accounts.update(key, { token: 'sk_rotated_token_0123456789', webhookSecret: 'whsec_rotated_0123456789' });
      accounts.revoke(key);
      throw new StoreWriteError(new Error('EROFS'));
    })).rejects.toThrow(StoreWriteError);
    expect(accounts.authenticate('Bearer sk_kept_token_0123456789')).toEqual({ account, key });
    for (const token of ['sk_added_token_0123456789', 'sk_rotated_token_0123456789']) expect(accounts.authenticate(`Bearer ${token}`)).toBe('invalid_api_key');
    expect(accounts.keysOf(account.id).map((k) => k.id)).toEqual([key.id]);
    expect([accounts.ofSecret('whsec_kept_0123456789'), accounts.ofSecret('whsec_added_0123456789'), accounts.ofSecret('whsec_rotated_0123456789')]).toEqual([account.id, undefined, undefined]);
    // The journal redacts what the keys are now: the added key's group is gone, the rotated key's secrets are back.
    expect(filed.has(added!)).toBe(false);
    expect(filed.get(key.id)).toEqual(['sk_kept_token_0123456789', 'whsec_kept_0123456789', undefined]);
  });
});
