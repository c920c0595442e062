import { describe, expect, it, vi } from 'vitest';
import type { Account, ApiKey } from '../../../src/service/core/accounts.js';
import { ServiceStore } from '../../../src/service/core/store.js';
import { AssistantConnections, type ConnectionTables } from '../../../src/service/assistant/connections.js';

// Issue 29 follow-up (the class of items 1 and 2): a request's connection lookups read its own rows, not
// every assistant connection ever made.

async function setup() {
  const store = await ServiceStore.open<ConnectionTables>({ file: false, tables: ['assistant'] });
  return { store, connections: new AssistantConnections(store, () => 1_000) };
}

const account = (id: number) => ({ id, toppedUp: false }) as Account;
const key = (id: string, accountId: number) => ({ id, accountId, token: `sk_${id}_0123456789abcdef` }) as ApiKey;

describe('AssistantConnections lookups', () => {
  it('finds a grant, a live client and an account\'s connections without reading the other rows', async () => {
    const { store, connections } = await setup();
    for (let i = 0; i < 2_000; i++) connections.forKey(key(`key_${i}`, 1));
    const made = await connections.connect(account(2), { grantId: 'grant_a', clientId: 'client_a', name: 'Assistant', dailyLimit: null });
    const values = vi.spyOn(store.table('assistant'), 'values');
    expect(connections.forGrant('grant_a')?.id).toBe(made.id);
    expect(connections.forGrant('grant_b')).toBeUndefined();
    expect(connections.hasLive('client_a')).toBe(true);
    expect(connections.hasLive('client_a', 2)).toBe(true);
    expect(connections.hasLive('client_a', 1)).toBe(false);
    expect(connections.of(2).map((row) => row.id)).toEqual([made.id]);
    expect(values).not.toHaveBeenCalled();
  });

  it('follows disconnects, rows removed beside it and rows put back, and a restart', async () => {
    const { store, connections } = await setup();
    const first = await connections.connect(account(2), { grantId: 'grant_a', clientId: 'client_a', name: 'Assistant', dailyLimit: null });
    await connections.disconnect(first);
    expect(connections.forGrant('grant_a')).toBeUndefined();
    expect(connections.hasLive('client_a')).toBe(false);
    expect(connections.of(2)).toEqual([expect.objectContaining({ id: first.id, disconnectedAt: 1_000 })]);
    // A new approval of the same client is a new connection.
    const second = await connections.connect(account(2), { grantId: 'grant_b', clientId: 'client_a', name: 'Assistant', dailyLimit: 20 });
    expect(connections.hasLive('client_a', 2)).toBe(true);
    // An account deleted (removeOwnedRows) takes its rows; a rollback may put one back.
    const row = store.table('assistant').get(second.id)!;
    store.table('assistant').remove(second.id);
    expect(connections.forGrant('grant_b')).toBeUndefined();
    expect(connections.of(2).map((r) => r.id)).toEqual([first.id]);
    store.table('assistant').put(row);
    expect(connections.forGrant('grant_b')?.id).toBe(second.id);
    // Made again from the rows at start.
    const reopened = new AssistantConnections(store as never, () => 2_000);
    expect(reopened.forGrant('grant_b')?.id).toBe(second.id);
    expect(reopened.of(2).map((r) => r.id)).toEqual([second.id, first.id]);
  });

  it('forgets rows removed beside it: after a reset\'s 500 removals, the same account\'s lookup visits none of them (issue 31, s5a)', async () => {
    // The hand-kept indexes kept every id ever filed and checked each row on read, so a lookup's cost grew
    // with the connections ever made under its key; the table's indexes drop a row when it goes.
    const { store, connections } = await setup();
    const table = store.table('assistant');
    for (let i = 0; i < 500; i++) connections.forKey(key(`key_${i}`, 1));
    for (const row of [...table.values()]) table.remove(row.id);
    const mine = connections.forKey(key('key_new', 1));
    const get = vi.spyOn(table, 'get');
    expect(connections.of(1)).toEqual([mine]);
    expect(get).not.toHaveBeenCalled();
  });
});
