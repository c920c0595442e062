import type { Row, ServiceStore } from './store.js';

/** A row that names its account (clips, assets, image jobs, upload links, keys, assistants). */
type Owned = Row & { accountId?: unknown; assistant?: unknown; payload?: { accountId?: unknown } };

/**
 * Removes every row of `tables` that belongs to an account being deleted (issue 29 item 8): the rows that
 * name it (`accountId`), its `Idempotency-Key` records (`<account>:<key>`), the charges of its
 * assistants (`assistant_spend`, by assistant id) and its OAuth grants, tokens and sessions (`oauth`,
 * `payload.accountId`). The account's own row and keys are `Accounts.remove`'s.
 * The rows go through the store, so a removal inside a unit of work is taken back with it. Answers how
 * many rows went, by table. Its cost is the number of rows: it runs for the admin token only.
 * @example removeOwnedRows(store, ['video', 'asset', 'idempotency'], 7) // { video: 3, asset: 1, idempotency: 2 }
 */
export function removeOwnedRows(store: ServiceStore<never>, tables: readonly string[], accountId: number): Record<string, number> {
  const table = (name: string) => (store as unknown as ServiceStore<Record<string, Owned>>).table(name);
  const removed: Record<string, number> = {};
  const assistants = new Set<unknown>();
  const owns = (name: string, row: Owned) => {
    if (row.accountId === accountId) return true;
    if (name === 'idempotency') return typeof row.id === 'string' && row.id.startsWith(`${accountId}:`);
    // The sign-in's records (grants, tokens, sessions) name their account as a string.
    if (name === 'oauth') return row.payload?.accountId === String(accountId);
    return name === 'assistant_spend' && assistants.has(row.assistant);
  };
  // Assistants first: their charges are found by their ids.
  const ordered = [...tables].sort((a, b) => Number(a === 'assistant_spend') - Number(b === 'assistant_spend'));
  for (const name of ordered) {
    const gone = [...table(name).values()].filter((row) => owns(name, row));
    for (const row of gone) {
      if (name === 'assistant') assistants.add(row.id);
      table(name).remove(row.id);
    }
    if (gone.length > 0) removed[name] = gone.length;
  }
  return removed;
}
