import { describe, expect, it } from 'vitest';
import { createRedactor, isSecretName, MIN_SECRET_LENGTH, REDACTED, SecretIndex } from '../../../src/service/testing/redact.js';

// Issue 22: no API key, webhook secret, bearer token or admin token ever appears in the journal.

const KEY = 'sk_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl';
const SECRET = 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0';
const ADMIN = 'adm-7f3c2a9d4e1b8c6f5a0d';
const JWT = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl';

describe('createRedactor', () => {
  const redactor = createRedactor([ADMIN, 'custom-user-chosen-key-0123456789']);

  it('cuts known secrets out of text wherever they are, even without a known shape', () => {
    expect(redactor.text(`token=${ADMIN}&x=1`)).toBe(`token=${REDACTED}&x=1`);
    expect(redactor.text('a fox, key custom-user-chosen-key-0123456789!')).toBe(`a fox, key ${REDACTED}!`);
  });

  it('cuts the shapes of this service’s secrets: sk_, whsec_, a JWT, a Bearer header', () => {
    expect(redactor.text(`my key is ${KEY}.`)).toBe(`my key is sk_${REDACTED}.`);
    expect(redactor.text(`secret:${SECRET}`)).toBe(`secret:whsec_${REDACTED}`);
    expect(redactor.text(`token ${JWT} end`)).toBe(`token ${REDACTED} end`);
    expect(redactor.text('Authorization: Bearer abc.def-123')).toBe(`Authorization: Bearer ${REDACTED}`);
    // Words that merely contain the letters are left alone.
    expect(redactor.text('task_config_error on the desk_lamp')).toBe('task_config_error on the desk_lamp');
  });

  it('replaces the value of members named like a credential, whatever it holds, at any depth', () => {
    const body = { prompt: 'a fox', api_key: 'anything', nested: { 'Webhook-Secret': { deep: 1 }, access_token: 'x', items: [{ client_secret: 's', sig: 'abc' }] } };
    expect(redactor.value(body)).toEqual({ prompt: 'a fox', api_key: REDACTED, nested: { 'Webhook-Secret': REDACTED, access_token: REDACTED, items: [{ client_secret: REDACTED, sig: REDACTED }] } });
    expect(['apiKey', 'X-Api-Key', 'admin_token', 'password', 'code_verifier', 'signature'].every(isSecretName)).toBe(true);
    expect(['idempotency_key', 'max_tokens', 'prompt', 'key_id', 'signed'].some(isSecretName)).toBe(false);
  });

  it('redacts member names too, keeps a __proto__ member a member, and turns non-JSON into JSON', () => {
    const parsed = JSON.parse(`{"__proto__": {"polluted": true}, "${KEY}": 1}`) as unknown;
    const clean = redactor.value(parsed) as Record<string, unknown>;
    expect(Object.keys(clean)).toEqual(['__proto__', `sk_${REDACTED}`]);
    expect(Object.getPrototypeOf(clean)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(redactor.value({ when: new Date(0), big: 10n, fn: () => 1, bytes: new Uint8Array(3) })).toEqual({ when: '1970-01-01T00:00:00.000Z', big: '10', bytes: '<3 bytes>' });
  });

  it('stops at a depth of 32 rather than walk a hostile nesting', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expect(JSON.stringify(redactor.value(deep))).toContain('[too deep]');
  });

  it('ignores known "secrets" under 8 characters, which would blank out prose', () => {
    expect(createRedactor(['a', 'fox']).text('a fox')).toBe('a fox');
  });
});

describe('SecretIndex and a redaction whose cost is the text, not the secrets (issue 29 item 2)', () => {
  it('holds secrets by group, replaced and forgotten as their owner changes them; one held by two groups stays until both let go', () => {
    const index = new SecretIndex();
    index.set('key_a', ['token-of-key-a-0123', 'shared-signing-secret', undefined, 'short']);
    index.set('key_b', ['token-of-key-b-0123', 'shared-signing-secret']);
    expect(index.size).toBe(3);
    const redactor = createRedactor(index);
    expect(redactor.text('a token-of-key-a-0123 b token-of-key-b-0123 s shared-signing-secret short')).toBe(`a ${REDACTED} b ${REDACTED} s ${REDACTED} short`);
    index.set('key_a', ['token-of-key-a-4567']);
    expect(redactor.text('token-of-key-a-0123 token-of-key-a-4567 shared-signing-secret')).toBe(`token-of-key-a-0123 ${REDACTED} ${REDACTED}`);
    expect(index.delete('key_b')).toBe(true);
    expect(index.delete('key_b')).toBe(false);
    expect(redactor.text('shared-signing-secret token-of-key-b-0123')).toBe('shared-signing-secret token-of-key-b-0123');
    expect([...index.groups()]).toEqual(['key_a']);
  });

  it('cuts the longest secret that starts at a place, and one that starts inside a shape and runs past it', () => {
    const index = new SecretIndex();
    index.set('a', ['prefix-12345', 'prefix-1234567890']);
    index.set('b', ['abcdefgh!!secret-tail']);
    const redactor = createRedactor(index);
    expect(redactor.text('x prefix-1234567890 y prefix-12345 z')).toBe(`x ${REDACTED} y ${REDACTED} z`);
    // The sk_ shape ends at '!', the known secret that starts inside it does not: both go, whole.
    expect(redactor.text(`sk_0123abcdefgh!!secret-tail end`)).toBe(`sk_${REDACTED}${REDACTED} end`);
    // Only the places where a known secret could still start are looked up inside a long shape.
    const before = index.lookups;
    expect(redactor.text(`sk_${'a'.repeat(100_000)} end`)).toBe(`sk_${REDACTED} end`);
    expect(index.lookups - before).toBeLessThan(100);
  });

  it('makes one lookup a character, and one more for each length of secret under a prefix that occurs, however many secrets are held', () => {
    const text = 'a fox jumps over the lazy dog; user-chosen words here. '.repeat(40);
    const lookups = (secrets: number) => {
      const index = new SecretIndex();
      for (let i = 0; i < secrets; i++) index.set(`key_${i}`, [`user-chosen-key-${String(i).padStart(5, '0')}`, `sk_${String(i).padStart(32, 'x')}`]);
      const before = index.lookups;
      createRedactor(index).text(text);
      return index.lookups - before;
    };
    const one = lookups(1);
    expect(lookups(20_000)).toBe(one);
    // One lookup at each place a secret could start (its first two characters), one more where a held
    // prefix's first two ("us") occur and one for the length under "user-cho" (40 times each). Issue 31:
    // elsewhere nothing more, so a prompt costs about one lookup a character.
    expect(one).toBe(text.length - MIN_SECRET_LENGTH + 1 + 40 + 40);
  });

  it('passes a place whose first two characters start no secret held with one lookup, and forgets a pair with its last secret (issue 31)', () => {
    const index = new SecretIndex();
    index.set('k', ['sk_live_0123456789', 'sk_test_abcdefghij']);
    const redactor = createRedactor(index);
    const prompt = 'a red fox running through fresh snow at dawn, cinematic';
    const before = index.lookups;
    expect(redactor.text(prompt)).toBe(prompt);
    expect(index.lookups - before).toBe(prompt.length - MIN_SECRET_LENGTH + 1);
    expect(redactor.text('key sk_test_abcdefghij!')).toBe(`key ${REDACTED}!`);
    index.set('k', ['zz-other-secret']);
    expect(redactor.text('a zz-other-secret and sk_live_0123456789')).toBe(`a ${REDACTED} and sk_${REDACTED}`);
    index.delete('k');
    expect(redactor.text('a zz-other-secret')).toBe('a zz-other-secret');
  });

  it('stops scanning once it has made more than maxChars, so a cut never reads past what it keeps', () => {
    const index = new SecretIndex();
    index.set('k', ['a-known-secret-value']);
    const redactor = createRedactor(index);
    const long = `${'x'.repeat(100)} a-known-secret-value ${'y'.repeat(100_000)}`;
    const before = index.lookups;
    const kept = redactor.text(long, 120);
    expect(kept.length).toBeGreaterThan(120);
    expect(kept.startsWith(`${'x'.repeat(100)} ${REDACTED} yyy`)).toBe(true);
    expect(index.lookups - before).toBeLessThan(200);
    // A secret across the cut is replaced whole, never kept in part.
    expect(redactor.text(`${'x'.repeat(10)}a-known-secret-value`, 12)).toBe(`${'x'.repeat(10)}${REDACTED}`);
    expect(redactor.text('short', 120)).toBe('short');
  });

  it('walks a large value only as far as its JSON can be kept, and what it keeps is the start of the whole copy', () => {
    const redactor = createRedactor(['a-known-secret-value']);
    const body = { prompt: 'a fox a-known-secret-value', api_key: 'x', items: Array.from({ length: 10_000 }, (_, i) => ({ n: i, text: 'word '.repeat(20) })) };
    const whole = JSON.stringify(redactor.value(body));
    const partial = redactor.value(body, 1000) as { items: unknown[] };
    const text = JSON.stringify(partial);
    expect(partial.items.length).toBeLessThan(20);
    expect(text.length).toBeGreaterThan(1000);
    expect(text.slice(0, 1000)).toBe(whole.slice(0, 1000));
    expect(text).toContain(`"prompt":"a fox ${REDACTED}","api_key":"${REDACTED}"`);
    // A value that fits is copied whole.
    expect(redactor.value({ a: [1, 'two', null, true] }, 1000)).toEqual({ a: [1, 'two', null, true] });
  });

  it('finds no JWT in a run of "eyJ-" without walking it once per start (a guard against quadratic time)', () => {
    const redactor = createRedactor();
    const hostile = 'eyJ-'.repeat(250_000);
    const started = performance.now();
    expect(redactor.text(hostile)).toBe(hostile);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(redactor.text(`x eyJ-eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln y`)).toBe(`x ${REDACTED} y`);
  });
});
