import { readTextIfExists } from '../store/json-file.js';

/** What `cliphook service` needs of an API key row in serve's data file (service/core/accounts.ts `ApiKey`). */
interface KeyRow {
  id: string;
  accountId: number;
  token: string;
  revokedAt: number | null;
}

/**
 * The API key a local `cliphook serve` printed at start-up (the first account's oldest live key, as
 * `Service.first()` picks it), read from its data file, or `null` when there is no such file. The file is
 * only read: serve holds its lock and keeps writing it. Its format is service/core/store.ts's: a snapshot
 * `{ version: 1, tables: { key: [rows] } }` and `<file>.journal`, one `[table, id, row | null]` per line,
 * replayed over it (the latest line of a row wins; a key made since the last snapshot is only there).
 * `cliphook service` finds the key as the Stripe CLI finds its config.
 */
export async function readServeKey(file: string): Promise<string | null> {
  const snapshot = await readTextIfExists(file);
  const journal = await readTextIfExists(`${file}.journal`);
  if (snapshot === null && journal === null) return null;
  const keys = new Map<string, KeyRow>();
  if (snapshot) {
    let document: { version?: unknown; tables?: { key?: unknown } };
    try {
      document = JSON.parse(snapshot) as typeof document;
    } catch {
      throw new Error(`${file} is not valid JSON`);
    }
    if (document?.version !== 1 || typeof document.tables !== 'object' || document.tables === null) throw new Error(`${file} is not a cliphook service data file`);
    for (const row of Array.isArray(document.tables.key) ? (document.tables.key as KeyRow[]) : []) keys.set(row.id, row);
  }
  for (const line of (journal ?? '').split('\n')) {
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // an empty line, or a torn last one (serve may be writing it right now)
    }
    if (!Array.isArray(entry) || entry[0] !== 'key') continue;
    const [, id, row] = entry as [string, string, KeyRow | null];
    if (row === null) keys.delete(id);
    else keys.set(id, row);
  }
  // Map order is insertion order, as in the service's own table: the first live key of account 1.
  for (const key of keys.values()) {
    if (key.accountId === 1 && key.revokedAt === null && typeof key.token === 'string') return key.token;
  }
  return null;
}
