// Issue 31 item 1: the assistant's repeat rules are inputs to the service's one Idempotency-Key engine (a
// repeat of the same arguments: a key kept 2 minutes; an idempotency_key: a key kept 24 h), and the first
// answers an earlier version kept in its own table move into it when the data file is opened.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { CallRow } from '../../../src/service/assistant/spending.js';
import type { Table } from '../../../src/service/core/store.js';
import { balance, call, connect, start } from './fixtures.js';

describe('the assistant\'s repeats on the one Idempotency-Key engine (issue 31 item 1)', () => {
  it('keeps a call\'s first answer as two records of the engine: its arguments for 2 minutes, its idempotency_key for 24 hours', async () => {
    const svc = await start();
    const client = await connect(svc);
    const first = await call(client, 'create_clip', { prompt: 'a kite', duration: 4, max_credits: 8, idempotency_key: 'kite-1' });
    const records = [...svc.service.store.table('idempotency').values()].filter((row) => row.id.startsWith('assistant:'));
    expect(records.map((row) => row.windowMs ?? null).sort()).toEqual([120_000, null]);
    expect(records.every((row) => (row.response.body as { id: number }).id === first.data.id)).toBe(true);
    const charged = await balance(svc);
    // Past 2 minutes the same arguments are a new call; the same idempotency_key still answers the first.
    await svc.clock.advance(3 * 60_000);
    const keyed = await call(client, 'create_clip', { prompt: 'a kite, reworded', duration: 4, max_credits: 8, idempotency_key: 'kite-1' });
    expect(keyed.data).toMatchObject({ id: first.data.id, replayed: true });
    expect(await balance(svc)).toBe(charged);
    const again = await call(client, 'create_clip', { prompt: 'a kite', duration: 4, max_credits: 8 });
    expect(again.data.id).not.toBe(first.data.id);
  });

  it('moves the first answers of an older data file into the engine: a repeat after the upgrade is not charged again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-one-engine-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'service.json');
    const before = await start({ file });
    const args = { prompt: 'a lantern', duration: 4, max_credits: 8 };
    const first = await call(await connect(before), 'create_clip', args);
    // Written as an earlier version kept it: in its own table, by the same id.
    const records = before.service.store.table('idempotency');
    const calls = before.service.store.table('assistant_call') as unknown as Table<CallRow>;
    await before.service.store.unit(async () => {
      for (const row of [...records.values()].filter((each) => each.id.startsWith('assistant:'))) {
        records.remove(row.id);
        calls.put({ id: row.id.slice('assistant:'.length), at: row.createdAt, window: row.windowMs ?? 86_400_000, value: row.response.body as Record<string, unknown> });
      }
    });
    await before.close();
    const after = await start({ file });
    expect([...(after.service.store.table('assistant_call') as unknown as Table<CallRow>).values()]).toEqual([]);
    const charged = await balance(after);
    const repeat = await call(await connect(after), 'create_clip', args);
    expect(repeat.data).toMatchObject({ id: first.data.id, replayed: true });
    expect(await balance(after)).toBe(charged);
  });
});
