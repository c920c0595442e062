// Issue 31 (s5a): one index kept by the table. Owners ask a table once for an index by a pure function of a
// row; the table keeps it in step on put, remove and load, a failed unit's rollback included, so no owner
// rebuilds or undoes one by hand (the clip index, the image job index, the key and ledger indexes did).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServiceStore, StoreWriteError } from '../../../src/service/core/store.js';

interface Clip {
  id: number;
  accountId: number;
  status: string;
}
interface Job {
  id: number;
  accountId: number;
  images: Array<{ token: string; thumbToken: string }>;
}
interface Key {
  id: string;
  token: string;
  revokedAt: number | null;
}
type Tables = { video: Clip; image_job: Job; key: Key };

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const open = (file: string | false = false) => ServiceStore.open<Tables>({ file, tables: ['video', 'image_job', 'key'] });
const ids = (rows: ReadonlyArray<{ id: number | string }>) => rows.map((row) => row.id);
const fails = () => {
  throw new StoreWriteError(new Error('EROFS'));
};
const tokensOf = (job: Job) => job.images.flatMap((image) => [image.token, image.thumbToken]);

describe('Table.index: one key per row', () => {
  it('files rows by their key, oldest first, and follows a put again with a changed key and a removal', async () => {
    const store = await open();
    const clips = store.table('video');
    clips.put({ id: 1, accountId: 7, status: 'done' });
    // Rows there before the index are filed when it is made.
    const byAccount = clips.index('accountId', (clip) => clip.accountId);
    clips.put({ id: 2, accountId: 8, status: 'done' });
    clips.put({ id: 3, accountId: 7, status: 'pending' });
    expect(ids(byAccount.get(7))).toEqual([1, 3]);
    expect([byAccount.count(7), byAccount.has(8), byAccount.has(9), byAccount.get(9)]).toEqual([2, true, false, []]);
    // Changed in place: the index keeps the keys of the last put until the row is put again.
    const first = clips.get(1)!;
    first.accountId = 8;
    expect(ids(byAccount.get(7))).toEqual([1, 3]);
    clips.put(first);
    expect(ids(byAccount.get(7))).toEqual([3]);
    // A row that gets a key goes last under it; one that keeps its key keeps its place.
    expect(ids(byAccount.get(8))).toEqual([2, 1]);
    clips.put({ ...clips.get(2)!, status: 'error' });
    expect(ids(byAccount.get(8))).toEqual([2, 1]);
    expect(byAccount.get(8)[0]!.status).toBe('error');
    expect(byAccount.first(8)).toBe(clips.get(2));
    clips.remove(2);
    expect(ids(byAccount.get(8))).toEqual([1]);
    clips.remove(1);
    expect([byAccount.has(8), byAccount.first(8)]).toEqual([false, undefined]);
    await store.close();
  });

  it('a put costs the row\'s own keys and a lookup the rows under its key: neither reads the other rows', async () => {
    const store = await open();
    const clips = store.table('video');
    const keysOf = vi.fn((clip: Clip) => clip.accountId);
    const byAccount = clips.index('accountId', keysOf);
    for (let id = 1; id <= 2_000; id++) clips.put({ id, accountId: id === 2_000 ? 1 : 2, status: 'done' });
    keysOf.mockClear();
    const values = vi.spyOn(clips, 'values');
    const get = vi.spyOn(clips, 'get');
    clips.put({ id: 2_001, accountId: 1, status: 'pending' });
    clips.remove(2_000);
    expect(keysOf).toHaveBeenCalledTimes(1);
    expect(ids(byAccount.get(1))).toEqual([2_001]);
    expect(values).not.toHaveBeenCalled();
    expect(get).not.toHaveBeenCalled();
    await store.close();
  });

  it('follows load (how a reload and the store replace rows), and files what a reopened data file holds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-table-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const store = await open(file);
    const clips = store.table('video');
    const byAccount = clips.index('accountId', (clip) => clip.accountId);
    clips.put({ id: 1, accountId: 7, status: 'done' });
    clips.put({ id: 2, accountId: 7, status: 'done' });
    clips.load({ id: 1, accountId: 9, status: 'done' }, 1);
    clips.load(null, 2);
    clips.load(null, 5);
    expect([ids(byAccount.get(7)), ids(byAccount.get(9))]).toEqual([[], [1]]);
    clips.put({ id: 3, accountId: 7, status: 'pending' });
    await store.commit();
    await store.close();
    const again = await open(file);
    const reopened = again.table('video').index('accountId', (clip) => clip.accountId);
    expect([ids(reopened.get(7)), ids(reopened.get(9))]).toEqual([[3], [1]]);
    await again.close();
  });
});

describe('Table.index: kept in step by a failed unit\'s rollback', () => {
  it('a row made, a key changed and a row removed in a unit that fails: every index answers as before it', async () => {
    const store = await open();
    const clips = store.table('video');
    const byAccount = clips.index('accountId', (clip) => clip.accountId);
    const byStatus = clips.index('status', (clip) => clip.status);
    for (const id of [1, 2, 3]) clips.put({ id: store.nextId('video'), accountId: 7, status: id === 3 ? 'pending' : 'done' });
    const unit = store.unit(() => {
      clips.put({ id: store.nextId('video'), accountId: 7, status: 'pending' });
      const moved = clips.get(2)!;
      moved.accountId = 8;
      moved.status = 'error';
      clips.put(moved);
      clips.remove(3);
      fails();
    });
    await expect(unit).rejects.toBeInstanceOf(StoreWriteError);
    // Undone newest first: the removed row comes back, then the moved one gets its key back; each goes
    // last, as any row that gets a key does (filing order; callers that list sort by id).
    expect(ids(byAccount.get(7))).toEqual([1, 3, 2]);
    expect([byAccount.has(8), ids(byStatus.get('done')), ids(byStatus.get('pending')), byStatus.has('error')]).toEqual([false, [1, 2], [3], false]);
    expect(byAccount.get(7).every((clip) => clips.get(clip.id) === clip)).toBe(true);
    expect(clips.size).toBe(3);
    await store.close();
  });

  it('a rollback gives a row back a unique key another row took meanwhile: held by both, never a rollback stopped halfway', async () => {
    const store = await open();
    const keys = store.table('key');
    const live = keys.index('token', (key) => (key.revokedAt === null ? key.token : undefined), { unique: true });
    let rolledBack = 0;
    store.onRollback(() => void rolledBack++);
    keys.put({ id: 'key_a', token: 'sk_t', revokedAt: null });
    keys.put({ id: 'key_x', token: 'sk_x', revokedAt: null });
    let meanwhileDone!: () => void;
    const meanwhile = new Promise<void>((resolve) => (meanwhileDone = resolve));
    const unit = store.unit(async () => {
      const x = keys.get('key_x')!;
      x.revokedAt = 1;
      keys.put(x);
      const a = keys.get('key_a')!;
      a.revokedAt = 1;
      keys.put(a);
      await meanwhile;
      fails();
    });
    // Meanwhile, outside the unit, another key takes the token key_a held.
    keys.put({ id: 'key_b', token: 'sk_t', revokedAt: null });
    meanwhileDone();
    // The unit's own failure, not the unique index's refusal; both of its changes undone; the owners told.
    await expect(unit).rejects.toBeInstanceOf(StoreWriteError);
    expect([keys.get('key_a')!.revokedAt, keys.get('key_x')!.revokedAt]).toEqual([null, null]);
    expect([ids(live.get('sk_t')), live.first('sk_x')?.id]).toEqual([['key_b', 'key_a'], 'key_x']);
    expect(rolledBack).toBe(1);
    // A put of the unit's own kind is still refused.
    expect(() => keys.put({ id: 'key_c', token: 'sk_x', revokedAt: null })).toThrow(/unique index token/);
    // Either holder of the shared token can still be changed (a webhook secret rotated): it takes no key.
    const a = keys.get('key_a')!;
    expect(keys.put(a)).toBe(a);
    const b = keys.get('key_b')!;
    expect(keys.put(b)).toBe(b);
    expect(ids(live.get('sk_t'))).toEqual(['key_b', 'key_a']);
    a.revokedAt = 2;
    keys.put(a);
    expect(ids(live.get('sk_t'))).toEqual(['key_b']);
    await store.close();
  });

  it('a watcher sees every put and removal, the rollback\'s too', async () => {
    const store = await open();
    const keys = store.table('key');
    const seen: Array<[string, string | null]> = [];
    keys.watch('log', (id, key) => seen.push([id, key?.token ?? null]));
    keys.put({ id: 'key_a', token: 'sk_a', revokedAt: null });
    await expect(store.unit(() => {
      keys.put({ id: 'key_b', token: 'sk_b', revokedAt: null });
      fails();
    })).rejects.toThrow(StoreWriteError);
    expect(seen).toEqual([['key_a', 'sk_a'], ['key_b', 'sk_b'], ['key_b', null]]);
    await store.close();
  });
});

describe('Table.index: several keys per row, unique keys', () => {
  it('files a row under each of its keys (duplicates once, none for null or []), and drops the keys a put no longer gives', async () => {
    const store = await open();
    const jobs = store.table('image_job');
    const byToken = jobs.index('fileToken', tokensOf);
    const job = jobs.put({ id: 1, accountId: 7, images: [] });
    expect(byToken.has('t1')).toBe(false);
    job.images = [{ token: 't1', thumbToken: 'th1' }, { token: 't2', thumbToken: 'th2' }];
    jobs.put(job);
    jobs.put({ id: 2, accountId: 7, images: [{ token: 't3', thumbToken: 't3' }] });
    expect(['t1', 'th1', 't2', 'th2', 't3'].map((token) => byToken.first(token)?.id)).toEqual([1, 1, 1, 1, 2]);
    expect(byToken.count('t3')).toBe(1);
    // Its images deleted (spec 4.11): the tokens answer nothing.
    job.images = job.images.slice(1);
    jobs.put(job);
    expect(['t1', 'th1', 't2'].map((token) => byToken.first(token)?.id)).toEqual([undefined, undefined, 1]);
    job.images = [];
    jobs.put(job);
    expect(byToken.has('t2')).toBe(false);
    const nullable = jobs.index('maybe', (row) => (row.id === 2 ? null : [row.accountId, null, undefined]));
    expect([ids(nullable.get(7)), nullable.has(2)]).toEqual([[1], false]);
    await store.close();
  });

  it('a row with many keys (past the small-list path) is filed once under each, and a put again drops what it no longer gives', async () => {
    const store = await open();
    const jobs = store.table('image_job');
    const byToken = jobs.index('fileToken', tokensOf);
    const images = Array.from({ length: 30 }, (_, i) => ({ token: `t${i}`, thumbToken: i % 2 === 0 ? `t${i}` : `th${i}` }));
    const job = jobs.put({ id: 1, accountId: 7, images });
    expect(images.flatMap((image) => [image.token, image.thumbToken]).every((token) => byToken.count(token) === 1)).toBe(true);
    job.images = images.slice(10);
    jobs.put(job);
    expect([byToken.has('t9'), byToken.has('th9'), byToken.has('t10'), byToken.has('th29')]).toEqual([false, false, true, true]);
    await store.close();
  });

  it('a unique index refuses a put that takes a key another row holds, before anything changes; a row giving up its key frees it', async () => {
    const store = await open();
    const keys = store.table('key');
    const live = keys.index('token', (key) => (key.revokedAt === null ? key.token : undefined), { unique: true });
    const first = keys.put({ id: 'key_a', token: 'sk_same_token_0123456789', revokedAt: null });
    // The same row put again keeps its key.
    keys.put(first);
    let error: unknown;
    try {
      keys.put({ id: 'key_b', token: 'sk_same_token_0123456789', revokedAt: null });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(TypeError);
    // The message names the rows, never the key (a token is a secret).
    expect((error as Error).message).toMatch(/"key_b".*"key_a"/);
    expect((error as Error).message).not.toContain('sk_same_token');
    expect([keys.get('key_b'), keys.size, live.first('sk_same_token_0123456789')]).toEqual([undefined, 1, first]);
    // Revoked: filed under nothing, so another key may have the token.
    first.revokedAt = 1;
    keys.put(first);
    expect(keys.put({ id: 'key_b', token: 'sk_same_token_0123456789', revokedAt: null }).id).toBe('key_b');
    expect(live.first('sk_same_token_0123456789')?.id).toBe('key_b');
    await store.close();
  });

  it('refuses a key that is not a string or a number, and bad options, with a TypeError naming them', async () => {
    const store = await open();
    const clips = store.table('video');
    clips.index('bad', (clip) => (clip.id === 2 ? ({} as unknown as number) : clip.id));
    expect(() => clips.put({ id: 2, accountId: 1, status: 'done' })).toThrow(/index bad: a key must be a string or a number/);
    // Refused before anything changed: no row, no journal line (the id stays unused).
    expect([clips.get(2), clips.size, store.lastId('video')]).toEqual([undefined, 0, 0]);
    expect(() => clips.index('', (clip) => clip.id)).toThrow(/`name`/);
    expect(() => clips.index('x', 'accountId' as never)).toThrow(/`keysOf`/);
    expect(() => clips.index('x', (clip) => clip.id, { unique: 'yes' as never })).toThrow(/`unique`/);
    await store.close();
  });

  it('an index asked for again by name replaces the earlier one, whose lookups then throw', async () => {
    const store = await open();
    const clips = store.table('video');
    const earlier = clips.index('accountId', (clip) => clip.accountId);
    clips.put({ id: 1, accountId: 7, status: 'done' });
    const later = clips.index('accountId', (clip) => clip.accountId);
    expect(ids(later.get(7))).toEqual([1]);
    expect(() => earlier.get(7)).toThrow(/replaced/);
    await store.close();
  });
});
