import { describe, expect, it } from 'vitest';
import { createRedactor, isSecretName, REDACTED } from '../../../src/service/testing/redact.js';

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
