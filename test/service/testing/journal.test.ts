import { describe, expect, it } from 'vitest';
import { JournalList, JournalQuery } from '../../../src/service/testing/contract/test-helpers.js';
import { JOURNAL_ACCOUNT_CAP, JOURNAL_ADMIN_CAP, JOURNAL_KEYLESS_CAP, JOURNAL_TOTAL_CAP, MAX_PATH_FILTER_SEGMENTS, JOURNAL_CAP, MAX_BODY_CHARS, MAX_ENTRY_CHARS, MAX_IDEMPOTENCY_KEY_CHARS, MAX_PATH_CHARS, MAX_QUERY_CHARS, RequestJournal, type JournalRecord } from '../../../src/service/testing/journal.js';
import { REDACTED, SecretIndex } from '../../../src/service/testing/redact.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const KEY = 'sk_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl';

/** A journal record with defaults, as the wiring would make one. */
function request(overrides: Partial<JournalRecord> = {}): JournalRecord {
  return { at: T0, account: 1, keyId: 'key_a', operation: 'createVideo', method: 'POST', path: '/v1/videos', query: {}, idempotencyKey: null, replayed: false, status: 202, code: null, body: { prompt: 'a fox' }, ...overrides };
}

describe('RequestJournal (issue 22)', () => {
  it('answers what was sent and answered, newest first, at the simulated time', () => {
    const journal = new RequestJournal();
    journal.record(request({ at: T0, idempotencyKey: 'retry-1', status: 503, code: 'upstream_busy' }));
    journal.record(request({ at: T0 + 5_000, idempotencyKey: 'retry-1', status: 202 }));
    journal.record(request({ at: T0 + 6_000, idempotencyKey: 'retry-1', status: 202, replayed: true }));
    const entries = journal.list({ operation: 'createVideo' });
    expect(entries.map((entry) => [entry.at, entry.status, entry.code, entry.replayed])).toEqual([
      ['2026-03-01T12:00:06.000Z', 202, null, true],
      ['2026-03-01T12:00:05.000Z', 202, null, false],
      ['2026-03-01T12:00:00.000Z', 503, 'upstream_busy', false],
    ]);
    // "Did my app send the same Idempotency-Key when it retried after a 503?"
    expect(new Set(entries.map((entry) => entry.idempotency_key))).toEqual(new Set(['retry-1']));
    expect(entries[2]).toEqual({
      at: '2026-03-01T12:00:00.000Z', account: 1, key_id: 'key_a', operation: 'createVideo', method: 'POST', path: '/v1/videos', query: {},
      idempotency_key: 'retry-1', replayed: false, status: 503, code: 'upstream_busy', body: { prompt: 'a fox' }, truncated: false,
    });
  });

  it('filters by method, path (exact or template), operation, status (or class), account, and limits', () => {
    const journal = new RequestJournal();
    journal.record(request());
    journal.record(request({ operation: 'getVideo', method: 'GET', path: '/v1/videos/7', status: 200, body: undefined }));
    journal.record(request({ operation: 'getVideo', method: 'GET', path: '/v1/videos/8', status: 404, code: 'not_found', account: 2, body: undefined }));
    journal.record(request({ operation: 'retryVideo', method: 'POST', path: '/v1/videos/7/retry', status: 400, code: 'not_failed', body: undefined }));
    const paths = (filter: Parameters<RequestJournal['list']>[0]) => journal.list(filter).map((entry) => entry.path);
    expect(paths({ method: 'get' })).toEqual(['/v1/videos/8', '/v1/videos/7']);
    expect(paths({ path: '/v1/videos/7' })).toEqual(['/v1/videos/7']);
    expect(paths({ path: '/v1/videos/{id}' })).toEqual(['/v1/videos/8', '/v1/videos/7']);
    expect(paths({ path: '/v1/videos/{id}/retry' })).toEqual(['/v1/videos/7/retry']);
    expect(paths({ operation: 'createVideo' })).toEqual(['/v1/videos']);
    expect(paths({ status: '4xx' })).toEqual(['/v1/videos/7/retry', '/v1/videos/8']);
    expect(paths({ status: 404 })).toEqual(['/v1/videos/8']);
    expect(paths({ status: '2xx', account: 1 })).toEqual(['/v1/videos/7', '/v1/videos']);
    expect(paths({ account: 2 })).toEqual(['/v1/videos/8']);
    expect(paths({ limit: 2 })).toEqual(['/v1/videos/7/retry', '/v1/videos/8']);
    expect(paths({ account: 3 })).toEqual([]);
  });

  it(`keeps the newest ${JOURNAL_CAP} entries and drops the oldest`, () => {
    const journal = new RequestJournal();
    for (let i = 0; i < JOURNAL_CAP + 250; i++) journal.record(request({ at: T0 + i, idempotencyKey: `k-${i}` }));
    expect(journal.size).toBe(JOURNAL_CAP);
    const all = journal.list({ limit: JOURNAL_CAP });
    expect(all).toHaveLength(JOURNAL_CAP);
    expect(all[0]!.idempotency_key).toBe(`k-${JOURNAL_CAP + 249}`);
    expect(all.at(-1)!.idempotency_key).toBe('k-250');
    expect(journal.list({ limit: 5000 })).toHaveLength(JOURNAL_CAP);
    const small = new RequestJournal({ accountCap: 3 });
    for (let i = 0; i < 7; i++) small.record(request({ status: 200 + i }));
    expect(small.list().map((entry) => entry.status)).toEqual([206, 205, 204]);
  });

  it('clears one account’s entries or all, answering how many went, and keeps the order of the rest', () => {
    const journal = new RequestJournal({ cap: 4 });
    for (const account of [1, 2, 1, 2, 1, 2]) journal.record(request({ account, status: 200 + account }));
    expect(journal.clear({ account: 2 })).toBe(2);
    expect(journal.list().map((entry) => entry.account)).toEqual([1, 1]);
    journal.record(request({ account: 3 }));
    expect(journal.list().map((entry) => entry.account)).toEqual([3, 1, 1]);
    expect(journal.clear()).toBe(3);
    expect(journal.size).toBe(0);
    expect(journal.list()).toEqual([]);
  });

  it('never keeps a secret: not in the path, the query, the Idempotency-Key or the body', () => {
    const secrets = new SecretIndex();
    secrets.set('admin', ['adm-7f3c2a9d4e1b8c6f5a0d']);
    const journal = new RequestJournal({ secrets });
    const entry = journal.record(request({
      path: `/v1/videos/${KEY}`,
      query: { sig: 'abc123', exp: '99', note: 'adm-7f3c2a9d4e1b8c6f5a0d' },
      idempotencyKey: KEY,
      body: { prompt: `use ${KEY}`, webhook_secret: 'whsec_abcdefghijkl', callback_url: 'https://x.test/hook?token=t0k3n' },
    }));
    expect(entry.path).toBe(`/v1/videos/sk_${REDACTED}`);
    expect(entry.query).toEqual({ sig: REDACTED, exp: '99', note: REDACTED });
    expect(entry.idempotency_key).toBe(`sk_${REDACTED}`);
    expect(entry.body).toEqual({ prompt: `use sk_${REDACTED}`, webhook_secret: REDACTED, callback_url: 'https://x.test/hook?token=t0k3n' });
    // The index is live: a key created later is cut from later entries.
    secrets.set('key_b', ['my-own-chosen-key-abcdefgh']);
    expect(journal.record(request({ body: 'key my-own-chosen-key-abcdefgh' })).body).toBe(`key ${REDACTED}`);
    expect(JSON.stringify(journal.list())).not.toMatch(/sk_Zm9v|whsec_abc|adm-7f3c|my-own-chosen/);
  });

  it('cuts what is long to its bound and says so; bytes are kept as their count', () => {
    const journal = new RequestJournal();
    const big = journal.record(request({ body: { prompt: 'x'.repeat(10_000) } }));
    expect(big.truncated).toBe(true);
    expect(typeof big.body).toBe('string');
    expect((big.body as string).length).toBe(MAX_BODY_CHARS);
    expect((big.body as string).startsWith('{"prompt":"xxx')).toBe(true);
    const text = journal.record(request({ body: 'y'.repeat(MAX_BODY_CHARS + 1) }));
    expect([text.truncated, (text.body as string).length]).toEqual([true, MAX_BODY_CHARS]);
    // A cut never splits a surrogate pair.
    const emoji = journal.record(request({ body: `${'a'.repeat(MAX_BODY_CHARS - 1)}😀` }));
    expect(emoji.body).toBe('a'.repeat(MAX_BODY_CHARS - 1));
    const long = journal.record(request({ path: `/v1/${'p'.repeat(5000)}`, idempotencyKey: 'k'.repeat(400), query: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`q${i}`, 'v'.repeat(300)])) }));
    expect(long.path).toHaveLength(MAX_PATH_CHARS);
    expect(long.idempotency_key).toHaveLength(MAX_IDEMPOTENCY_KEY_CHARS);
    const queryChars = Object.entries(long.query).reduce((sum, [name, value]) => sum + name.length + String(value).length, 0);
    expect(queryChars).toBeLessThanOrEqual(MAX_QUERY_CHARS);
    expect(Object.values(long.query).every((value) => value === 'v'.repeat(256))).toBe(true);
    expect(long.truncated).toBe(true);
    expect(journal.record(request({ body: new Uint8Array(2048) })).body).toBe('<2048 bytes>');
    expect(journal.record(request({ body: undefined })).body).toBeNull();
    expect(journal.record(request({ query: { tag: ['a', 'b'] } })).query).toEqual({ tag: ['a', 'b'] });
  });

  it('holds at most cap × MAX_ENTRY_CHARS characters however large the requests', () => {
    const journal = new RequestJournal();
    const large = 'z'.repeat(64 * 1024);
    const query = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`name${i}`.repeat(20), large.slice(0, 5000)]));
    for (let i = 0; i < JOURNAL_CAP + 100; i++) {
      journal.record(request({ path: `/v1/videos/${large.slice(0, 20_000)}`, query, idempotencyKey: large.slice(0, 10_000), body: i % 2 ? { prompt: large, items: [large] } : large }));
    }
    expect(journal.size).toBe(JOURNAL_CAP);
    const held = JSON.stringify(journal.list({ limit: JOURNAL_CAP })).length;
    expect(held).toBeLessThanOrEqual(JOURNAL_CAP * MAX_ENTRY_CHARS);
    expect(held).toBeGreaterThan(JOURNAL_CAP * MAX_BODY_CHARS);
  });

  it('answers entries that cannot be changed by whoever reads them', () => {
    const journal = new RequestJournal();
    journal.record(request({ body: { prompt: 'a fox', items: [{ a: 1 }] } }));
    const [entry] = journal.list();
    expect(Object.isFrozen(entry)).toBe(true);
    expect(Object.isFrozen((entry!.body as { items: object[] }).items[0])).toBe(true);
    // Issue 31: frozen by its shape (the query and its lists too), not by a walk of every member.
    const queried = journal.record(request({ query: { status: 'done', tag: ['a', 'b'] } }));
    expect([Object.isFrozen(queried.query), Object.isFrozen(queried.query.tag)]).toEqual([true, true]);
  });

  it('answers what the contract describes, filtered by the contract’s own parsed query', () => {
    const journal = new RequestJournal();
    journal.record(request({ query: { tag: ['a', 'b'], limit: '5' }, body: { prompt: 'x'.repeat(9000) } }));
    journal.record(request({ operation: null, method: 'GET', path: '/files/x.png', status: 404, code: 'not_found', account: null, keyId: null, body: undefined }));
    const data = journal.list(JournalQuery.parse({ status: '4xx', path: '/files/x.png' }));
    expect(data).toHaveLength(1);
    expect(JournalList.parse({ data: journal.list() })).toEqual({ data: journal.list() });
  });

  it('refuses a bad cap or secrets option at construction', () => {
    expect(() => new RequestJournal({ cap: 0 })).toThrow('Expected `cap` to be a whole number >= 1, got 0.');
    expect(() => new RequestJournal({ accountCap: 1.5 })).toThrow('Expected `accountCap` to be a whole number >= 1, got 1.5.');
    expect(() => new RequestJournal({ keylessCap: -1 })).toThrow('Expected `keylessCap` to be a whole number >= 1, got -1.');
    expect(() => new RequestJournal({ secrets: (() => ['x']) as never })).toThrow('Expected `secrets` to be a SecretIndex');
  });
});

describe('RequestJournal under attack (issue 29)', () => {
  it('item 1: matches a template segment by segment, a placeholder standing for one non-empty segment', () => {
    const journal = new RequestJournal();
    for (const path of ['/v1/videos/7', '/v1/videos/', '/v1/videos/7/retry', '/v1/videos//retry', '/v1/images/7', '/v1/videos/{id}']) journal.record(request({ path }));
    const paths = (path: string) => journal.list({ path }).map((entry) => entry.path).reverse();
    expect(paths('/v1/videos/{id}')).toEqual(['/v1/videos/7', '/v1/videos/{id}']);
    expect(paths('/v1/{kind}/{id}')).toEqual(['/v1/videos/7', '/v1/images/7', '/v1/videos/{id}']);
    expect(paths('/v1/videos/{id}/retry')).toEqual(['/v1/videos/7/retry']);
    expect(paths('/v1/videos/7')).toEqual(['/v1/videos/7']);
    // A placeholder is a whole segment; anything else is compared as written.
    expect(paths('/v1/videos/{a}{b}')).toEqual([]);
    expect(paths('/v1/videos/{')).toEqual([]);
    expect(paths('/{a}')).toEqual([]);
  });

  it('item 1: a 16-placeholder filter against a long path costs that path, and a filter past its bounds is refused', () => {
    const journal = new RequestJournal();
    for (let i = 0; i < 50; i++) journal.record(request({ path: `/v1/videos/${'a'.repeat(2000)}` }));
    const placeholders = Array.from({ length: 16 }, (_, i) => `{p${i}}`);
    const started = performance.now();
    expect(journal.list({ path: `/v1/videos/${placeholders.join('')}x` })).toEqual([]);
    expect(journal.list({ path: `/${placeholders.join('/')}` })).toEqual([]);
    expect(journal.list({ path: '/v1/videos/{id}' })).toHaveLength(50);
    // A guard against catastrophic backtracking only: before, one such filter never answered.
    expect(performance.now() - started).toBeLessThan(1000);
    const tooMany = `/${Array.from({ length: MAX_PATH_FILTER_SEGMENTS + 1 }, () => '{s}').join('/')}`;
    expect(() => journal.list({ path: tooMany })).toThrow(`path has at most ${MAX_PATH_FILTER_SEGMENTS} segments`);
    expect(() => journal.list({ path: `/${'x'.repeat(3000)}` })).toThrow('path is at most 2048 characters');
  });

  it('item 2: redacting a large body makes the same lookups whether 10 or 5,000 keys were ever made, and keeps a bounded body', () => {
    const lookups = (keys: number) => {
      const secrets = new SecretIndex();
      // Secrets of one length under a prefix cost one lookup where the prefix occurs, however many there are.
      for (let i = 0; i < keys; i++) secrets.set(`key_${i}`, [`user-chosen-key-${String(i).padStart(4, '0')}-0123456789`, `user-signing-secret-${String(i).padStart(4, '0')}`]);
      const journal = new RequestJournal({ secrets });
      const body = { prompt: 'a fox', notes: Array.from({ length: 900 }, (_, i) => `user-chosen but not a key ${i} `.repeat(30)) };
      const before = secrets.lookups;
      const entry = journal.record(request({ body }));
      expect(entry.truncated).toBe(true);
      expect(entry.body).toHaveLength(MAX_BODY_CHARS);
      return secrets.lookups - before;
    };
    const few = lookups(10);
    expect(lookups(5_000)).toBe(few);
    expect(few).toBeGreaterThan(0);
    // The body is about 800,000 characters: only about what is kept is scanned.
    expect(few).toBeLessThan(3 * MAX_BODY_CHARS);
  });

  it('item 5: each account keeps its own entries; requests without a valid key go to a ring of their own', () => {
    const journal = new RequestJournal();
    expect([JOURNAL_ACCOUNT_CAP, JOURNAL_KEYLESS_CAP, JOURNAL_TOTAL_CAP]).toEqual([1000, 1000, 4000]);
    journal.record(request({ account: 1, idempotencyKey: 'a-1' }));
    journal.record(request({ account: 2, idempotencyKey: 'b-1' }));
    for (let i = 0; i < JOURNAL_KEYLESS_CAP + 500; i++) journal.record(request({ account: null, keyId: null, idempotencyKey: `anon-${i}` }));
    expect(journal.list({ account: 1 }).map((entry) => entry.idempotency_key)).toEqual(['a-1']);
    expect(journal.list({ account: 2 }).map((entry) => entry.idempotency_key)).toEqual(['b-1']);
    expect(journal.size).toBe(JOURNAL_KEYLESS_CAP + 2);
    // The admin's view interleaves them all, newest first.
    const all = journal.list({ limit: JOURNAL_CAP });
    expect(all[0]!.idempotency_key).toBe(`anon-${JOURNAL_KEYLESS_CAP + 499}`);
    expect(journal.list({ limit: 5000 }).slice(-3).map((entry) => entry.idempotency_key)).toEqual(['anon-500', 'b-1', 'a-1']);
  });

  it('item 5: an account is bounded on its own, and past the total the oldest entry of any account goes', () => {
    const journal = new RequestJournal({ accountCap: 3, keylessCap: 2, cap: 5 });
    for (let i = 0; i < 10; i++) journal.record(request({ account: 1, idempotencyKey: `a-${i}` }));
    const keys = (account?: number) => journal.list({ account }).map((entry) => entry.idempotency_key);
    expect(keys(1)).toEqual(['a-9', 'a-8', 'a-7']);
    for (let i = 0; i < 3; i++) journal.record(request({ account: 2, idempotencyKey: `b-${i}` }));
    // 6 entries of accounts past a total of 5: account 1's oldest went.
    expect(keys(1)).toEqual(['a-9', 'a-8']);
    expect(keys(2)).toEqual(['b-2', 'b-1', 'b-0']);
    for (let i = 0; i < 5; i++) journal.record(request({ account: null, idempotencyKey: `n-${i}` }));
    expect(keys()).toEqual(['n-4', 'n-3', 'b-2', 'b-1', 'b-0', 'a-9', 'a-8']);
    expect(journal.clear({ account: 1 })).toBe(2);
    expect(journal.size).toBe(5);
    journal.record(request({ account: 3, idempotencyKey: 'c-0' }));
    expect(keys()).toEqual(['c-0', 'n-4', 'n-3', 'b-2', 'b-1', 'b-0']);
  });

  it('follow-up item 4: the admin token has a bounded lane of its own, which key-less requests never evict', () => {
    expect(JOURNAL_ADMIN_CAP).toBe(JOURNAL_CAP);
    const journal = new RequestJournal({ accountCap: 3, keylessCap: 2, adminCap: 2, cap: 5 });
    const keys = (account?: number) => journal.list({ account }).map((entry) => entry.idempotency_key);
    journal.record(request({ account: null, keyId: null, admin: true, idempotencyKey: 'adm-0' }));
    journal.record(request({ account: 1, idempotencyKey: 'a-0' }));
    for (let i = 0; i < 10; i++) journal.record(request({ account: null, keyId: null, idempotencyKey: `n-${i}` }));
    expect(keys()).toEqual(['n-9', 'n-8', 'a-0', 'adm-0']);
    // Answered as any key-less entry (no account), and bounded on its own: the admin's oldest goes past its cap.
    expect(journal.list({ limit: 1, operation: 'createVideo', status: 202 }).length).toBe(1);
    for (let i = 1; i < 4; i++) journal.record(request({ account: null, keyId: null, admin: true, idempotencyKey: `adm-${i}` }));
    expect(keys()).toEqual(['adm-3', 'adm-2', 'n-9', 'n-8', 'a-0']);
    expect(journal.size).toBe(5);
    expect(journal.list({ account: 1 }).map((entry) => entry.account)).toEqual([1]);
    expect(journal.clear()).toBe(5);
    expect(keys()).toEqual([]);
    expect(() => new RequestJournal({ adminCap: 0 })).toThrow('Expected `adminCap` to be a whole number >= 1, got 0.');
  });
});
