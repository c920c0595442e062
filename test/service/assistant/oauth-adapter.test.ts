// The authorization server's storage: bounded registrations that never evict a client in use, sign-ins in
// memory only, and a grant's codes and tokens revoked together.
import { describe, expect, it, vi } from 'vitest';
import { MAX_INTERACTIONS, MAX_REGISTERED_CLIENTS, StoreAdapterFactory, type OAuthTables } from '../../../src/service/assistant/oauth/adapter.js';
import { OAUTH_TTL } from '../../../src/service/assistant/oauth/paths.js';
import { ServiceStore } from '../../../src/service/core/store.js';

const open = () => ServiceStore.open<OAuthTables>({ file: false, tables: ['oauth'] });

describe('StoreAdapterFactory', () => {
  it('keeps at most MAX_REGISTERED_CLIENTS clients, dropping the oldest one no assistant uses', async () => {
    const store = await open();
    const used = new Set(['c0', 'c1']);
    const factory = new StoreAdapterFactory(store, { clientInUse: (id) => used.has(id) });
    const clients = factory.adapter('Client');
    for (let i = 0; i < MAX_REGISTERED_CLIENTS; i++) await clients.upsert(`c${i}`, { client_id: `c${i}` });
    expect(factory.clientCount()).toBe(MAX_REGISTERED_CLIENTS);
    await clients.upsert('newcomer', { client_id: 'newcomer' });
    expect(factory.clientCount()).toBe(MAX_REGISTERED_CLIENTS);
    expect(await clients.find('c0')).toBeDefined();
    expect(await clients.find('c1')).toBeDefined();
    expect(await clients.find('c2')).toBeUndefined();
    expect(await clients.find('newcomer')).toBeDefined();
    // Updating a kept client makes no room and drops nobody.
    await clients.upsert('c3', { client_id: 'c3', client_name: 'renamed' });
    expect(await clients.find('c4')).toBeDefined();
  });

  it('refuses a registration when every kept client is in use', async () => {
    const store = await open();
    const factory = new StoreAdapterFactory(store, { clientInUse: () => true });
    const clients = factory.adapter('Client');
    for (let i = 0; i < MAX_REGISTERED_CLIENTS; i++) await clients.upsert(`c${i}`, { client_id: `c${i}` });
    await expect(clients.upsert('one-more', { client_id: 'one-more' })).rejects.toThrow(/in use by connected assistants/);
  });

  it('never drops a client registered in the last ten minutes (a person may be on its consent page)', async () => {
    const store = await open();
    let now = 2_000_000_000_000;
    const factory = new StoreAdapterFactory(store, { now: () => now });
    const clients = factory.adapter('Client');
    const issued = () => Math.floor(now / 1000);
    for (let i = 0; i < MAX_REGISTERED_CLIENTS; i++) await clients.upsert(`c${i}`, { client_id: `c${i}`, client_id_issued_at: issued() });
    await expect(clients.upsert('flood', { client_id: 'flood', client_id_issued_at: issued() })).rejects.toThrow(/last 10 minutes/);
    now += 11 * 60_000;
    await clients.upsert('later', { client_id: 'later', client_id_issued_at: issued() });
    expect(await clients.find('c0')).toBeUndefined();
    expect(await clients.find('later')).toBeDefined();
  });

  it('drops sign-ins nobody opened before one a person has open', async () => {
    const store = await open();
    const factory = new StoreAdapterFactory(store);
    const interactions = factory.adapter('Interaction');
    await interactions.upsert('mine', { uid: 'mine' }, 600);
    factory.markOpened('mine');
    for (let i = 0; i < MAX_INTERACTIONS + 10; i++) await interactions.upsert(`flood${i}`, { uid: `flood${i}` }, 600);
    expect(await interactions.find('mine')).toMatchObject({ uid: 'mine' });
    // The library saves it again as the person goes on: it stays marked.
    await interactions.upsert('mine', { uid: 'mine', result: {} }, 600);
    for (let i = 0; i < 20; i++) await interactions.upsert(`more${i}`, { uid: `more${i}` }, 600);
    expect(await interactions.find('mine')).toMatchObject({ result: {} });
  });

  it('keeps sign-ins in progress in memory only, at most MAX_INTERACTIONS, oldest dropped', async () => {
    const store = await open();
    const factory = new StoreAdapterFactory(store);
    const interactions = factory.adapter('Interaction');
    for (let i = 0; i <= MAX_INTERACTIONS; i++) await interactions.upsert(`i${i}`, { uid: `i${i}` }, 600);
    expect(store.table('oauth').size).toBe(0);
    expect(await interactions.find('i0')).toBeUndefined();
    expect(await interactions.find(`i${MAX_INTERACTIONS}`)).toMatchObject({ uid: `i${MAX_INTERACTIONS}` });
  });

  it('treats expired records as gone and revokes the codes and tokens of a grant together', async () => {
    let now = 1_000_000;
    const store = await open();
    const factory = new StoreAdapterFactory(store, { now: () => now });
    const tokens = factory.adapter('AccessToken');
    const refresh = factory.adapter('RefreshToken');
    await tokens.upsert('t1', { grantId: 'g1' }, 60);
    await refresh.upsert('r1', { grantId: 'g1' }, 3_600);
    await tokens.upsert('t2', { grantId: 'g2' }, 60);
    now += 61_000;
    expect(await tokens.find('t1')).toBeUndefined();
    expect(await refresh.find('r1')).toBeDefined();
    await refresh.revokeByGrantId('g1');
    expect(await refresh.find('r1')).toBeUndefined();
    now -= 61_000;
    expect(await tokens.find('t2')).toBeDefined();
  });

  it('shows a refresh token as unused for the grace period after its first use, and only a refresh token', async () => {
    let now = 1_000_000_000;
    const store = await open();
    const factory = new StoreAdapterFactory(store, { now: () => now });
    const refresh = factory.adapter('RefreshToken');
    const codes = factory.adapter('AuthorizationCode');
    await refresh.upsert('r1', { grantId: 'g1' }, 3_600);
    await codes.upsert('c1', { grantId: 'g1' }, 60);
    await refresh.consume('r1');
    await codes.consume('c1');
    expect((await refresh.find('r1'))?.consumed).toBeUndefined();
    expect((await codes.find('c1'))?.consumed).toBe(now / 1000);
    // A second use within the period does not move its start.
    now += (OAUTH_TTL.rotatedRefreshGrace - 1) * 1000;
    await refresh.consume('r1');
    expect((await refresh.find('r1'))?.consumed).toBeUndefined();
    now += 1000;
    expect((await refresh.find('r1'))?.consumed).toBe(1_000_000);
  });

  it('revokes a grant whose first revocation was taken back with its unit (a disconnect whose write failed): the lookups are the table\'s', async () => {
    const store = await open();
    const factory = new StoreAdapterFactory(store);
    const tokens = factory.adapter('AccessToken');
    await tokens.upsert('t1', { grantId: 'g1', accountId: 'a' }, 3600);
    await tokens.upsert('t2', { grantId: 'g1', accountId: 'a' }, 3600);
    await expect(
      store.unit(async () => {
        expect(factory.revokeGrant('g1')).toBe(true);
        throw new Error('the write of the disconnect failed');
      }),
    ).rejects.toThrow(/failed/);
    // The tokens are back with the rows; the retry finds and revokes them.
    expect(await tokens.find('t1')).toBeDefined();
    expect(factory.revokeGrant('g1')).toBe(true);
    expect([await tokens.find('t1'), await tokens.find('t2')]).toEqual([undefined, undefined]);
  });

  it('counts and evicts clients from the table itself: a registration taken back is not counted, and making room reads the clients only', async () => {
    const store = await open();
    const factory = new StoreAdapterFactory(store);
    const clients = factory.adapter('Client');
    await expect(
      store.unit(async () => {
        await clients.upsert('gone', { client_id: 'gone' }).catch(() => undefined);
        throw new Error('taken back');
      }),
    ).rejects.toThrow(/taken back/);
    expect(factory.clientCount()).toBe(0);
    const tokens = factory.adapter('AccessToken');
    for (let i = 0; i < 300; i++) await tokens.upsert(`t${i}`, { grantId: `g${i}` }, 3600);
    for (let i = 0; i < MAX_REGISTERED_CLIENTS; i++) await clients.upsert(`c${i}`, { client_id: `c${i}` });
    const table = store.table('oauth');
    const values = vi.spyOn(table, 'values');
    await clients.upsert('newcomer', { client_id: 'newcomer' });
    expect(values).not.toHaveBeenCalled();
    expect(await clients.find('c0')).toBeUndefined();
    expect(factory.clientCount()).toBe(MAX_REGISTERED_CLIENTS);
  });
});
