import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint, Idempotency, parseIdempotencyKey, type IdempotencyRow } from '../../../src/service/core/idempotency.js';
import { ServiceStore } from '../../../src/service/core/store.js';

async function setup() {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const store = await ServiceStore.open<{ idempotency: IdempotencyRow }>({ file: false, tables: ['idempotency'] });
  const idem = new Idempotency({ table: store.table('idempotency'), now: () => now });
  return { idem, store, advance: (ms: number) => void (now += ms) };
}

const A = fingerprint('POST', '/v1/videos', { prompt: 'a fox' });
const B = fingerprint('POST', '/v1/videos', { prompt: 'a cat' });

describe('Idempotency (spec section 7)', () => {
  it('names the caller in Redis only with Redis: without it, a shared scope given as a function is never called (issue 31, the walk)', async () => {
    const { idem, store } = await setup();
    // Issue 31 (the bench's figures): in one process the answer is at once, not a promise, and so is sharing it.
    const here = idem.begin('1', 'k-here', A);
    expect(here).not.toBeInstanceOf(Promise);
    expect((here as { share(r: null): unknown }).share(null)).toBeUndefined();
    let asked = 0;
    const scope = () => String(++asked);
    expect((await idem.begin('1', 'k-walk', A, scope)).kind).toBe('fresh');
    expect(asked).toBe(0);
    const seen: string[] = [];
    const shared = new Idempotency({
      table: store.table('idempotency'), now: () => 0,
      shared: { begin: async (key: string) => (seen.push(key), { kind: 'fresh', finish: async () => undefined }) } as never,
    });
    expect((await shared.begin('1', 'k-redis', A, scope)).kind).toBe('fresh');
    expect([asked, seen]).toEqual([1, ['1:k-redis']]);
  });

  it('replays a succeeded request within 24 h, and forgets it after', async () => {
    const { idem, advance } = await setup();
    const first = await idem.begin('1', 'key-1', A);
    if (first.kind !== 'fresh') throw new Error(first.kind);
    first.finish({ status: 202, body: { id: 7 } });
    advance(24 * 3_600_000 - 1);
    expect(await idem.begin('1', 'key-1', A)).toEqual({ kind: 'replay', response: { status: 202, body: { id: 7 } } });
    advance(1);
    expect((await idem.begin('1', 'key-1', A)).kind).toBe('fresh');
  });

  it('answers in_progress while the first runs, reused for another body, and scopes keys per account', async () => {
    const { idem } = await setup();
    const first = await idem.begin('1', 'k', A);
    expect(await idem.begin('1', 'k', A)).toEqual({ kind: 'in_progress' });
    expect(await idem.begin('1', 'k', B)).toEqual({ kind: 'reused' });
    expect((await idem.begin('2', 'k', A)).kind).toBe('fresh');
    if (first.kind !== 'fresh') throw new Error(first.kind);
    first.finish({ status: 202, body: {} });
    expect(await idem.begin('1', 'k', B)).toEqual({ kind: 'reused' });
  });

  it('releases the key when the first request failed before a task existed', async () => {
    const { idem } = await setup();
    for (const status of [400, 402, 422, 500, 503]) {
      const first = await idem.begin('1', `k${status}`, A);
      if (first.kind !== 'fresh') throw new Error(first.kind);
      first.finish({ status, body: { code: 'x' } });
      expect((await idem.begin('1', `k${status}`, B)).kind).toBe('fresh');
    }
    const crashed = await idem.begin('1', 'k-null', A);
    if (crashed.kind !== 'fresh') throw new Error(crashed.kind);
    crashed.finish(null);
    expect((await idem.begin('1', 'k-null', A)).kind).toBe('fresh');
  });

  it('keeps its records in the store, which sweeps expired ones', async () => {
    const { idem, store, advance } = await setup();
    const first = await idem.begin('1', 'k', A);
    if (first.kind !== 'fresh') throw new Error(first.kind);
    first.finish({ status: 202, body: {} });
    expect(store.table('idempotency').size).toBe(1);
    advance(25 * 3_600_000);
    await idem.begin('1', 'other', A);
    expect(store.table('idempotency').get('1:k')).toBeUndefined();
  });

  it('checks the header: 1-255 printable ASCII characters', () => {
    expect(parseIdempotencyKey(undefined)).toBeNull();
    expect(parseIdempotencyKey('a')).toBe('a');
    expect(parseIdempotencyKey('~'.repeat(255))).toBe('~'.repeat(255));
    for (const bad of ['', 'a b', 'é', 'x'.repeat(256), '\t', ['a', 'b']]) expect(parseIdempotencyKey(bad)).toBe(false);
  });

  it('fingerprints the request, not its serialisation', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
    expect(fingerprint('POST', '/v1/videos', { a: 1, b: 2 })).toBe(fingerprint('POST', '/v1/videos', { b: 2, a: 1 }));
    expect(fingerprint('POST', '/v1/videos', { a: 1 })).not.toBe(fingerprint('POST', '/v1/videos/batch', { a: 1 }));
  });

  it('leaves out a member whose value is undefined, as JSON does: the assistant\'s repeat of the same arguments uses the same form (issue 31 item 1)', () => {
    expect(canonicalJson({ b: undefined, a: [1, { c: undefined, d: 'x' }] })).toBe(JSON.stringify({ a: [1, { d: 'x' }] }));
    expect(canonicalJson({ prompt: 'a fox', model: undefined })).toBe(canonicalJson({ prompt: 'a fox' }));
  });
});
