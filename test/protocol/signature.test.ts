import { createHmac } from 'node:crypto';
import { sign as octokitSign, verify as octokitVerify } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { sign, verifySignature } from '../../src/index.js';
import { parseSignatureHeader } from '../../src/protocol/signature.js';

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const reference = (body: string | Buffer, key = secret) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;

describe('sign', () => {
  it('is the lowercase hex HMAC-SHA256 of the raw bytes, prefixed sha256=', () => {
    const body = '{"event":"video.completed","id":1}';
    expect(sign(body, secret)).toBe(reference(body));
    expect(sign(body, secret)).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('treats strings as UTF-8 and bytes as they are', () => {
    const body = '{"prompt":"renard roux ❄️ 雪"}';
    expect(sign(body, secret)).toBe(sign(Buffer.from(body, 'utf8'), secret));
    expect(sign(new Uint8Array(Buffer.from(body)), secret)).toBe(reference(body));
  });

  it('matches node for small, block-sized, large and long-key inputs', () => {
    for (const size of [0, 1, 55, 63, 64, 65, 4095, 4096, 4097, 65_536]) {
      const body = Buffer.alloc(size, 0x61 + (size % 26));
      expect(sign(body, secret)).toBe(reference(body));
      // A view that starts inside a larger buffer (as a parser's slice would) hashes only its own bytes.
      const backing = Buffer.alloc(size + 7, 0x7a);
      body.copy(backing, 3);
      expect(sign(new Uint8Array(backing.buffer, backing.byteOffset + 3, size), secret)).toBe(reference(body));
    }
    const longKey = 'k'.repeat(200);
    expect(sign('body', longKey)).toBe(reference('body', longKey));
    expect(sign('body', 'ключ-🔑')).toBe(reference('body', 'ключ-🔑'));
    // Above the one-shot size the body is streamed after the cached ipad block: same pads, same result.
    const large = Buffer.alloc(10_000, 0x62);
    expect(sign(large, longKey)).toBe(reference(large, longKey));
    const text = `{"prompt":"${'雪'.repeat(2_000)}"}`; // 6,000+ bytes of UTF-8 from a string
    expect(sign(text, secret)).toBe(reference(text));
    expect(verifySignature(text, reference(text), ['whsec_old', secret])).toBe(true);
  });

  it('agrees with @octokit/webhooks-methods, an independent implementation of the scheme', async () => {
    const body = JSON.stringify({ event: 'video.failed', id: 7, error: 'busy' });
    expect(sign(body, secret)).toBe(await octokitSign(secret, body));
    expect(await octokitVerify(secret, body, sign(body, secret))).toBe(true);
  });

  it('refuses an empty secret with a TypeError naming it', () => {
    expect(() => sign('x', '')).toThrow(/`secret`/);
  });
});

describe('verifySignature', () => {
  const body = '{"event":"video.completed","id":42}';
  const header = sign(body, secret);

  it('accepts the right signature and refuses a changed body or secret', () => {
    expect(verifySignature(body, header, secret)).toBe(true);
    expect(verifySignature(`${body} `, header, secret)).toBe(false);
    expect(verifySignature(body, header, 'whsec_other')).toBe(false);
  });

  it('accepts any secret of a rotation list', () => {
    expect(verifySignature(body, sign(body, 'whsec_old'), ['whsec_new', 'whsec_old'])).toBe(true);
    expect(verifySignature(body, sign(body, 'whsec_new'), ['whsec_new', 'whsec_old'])).toBe(true);
    expect(verifySignature(body, sign(body, 'whsec_gone'), ['whsec_new', 'whsec_old'])).toBe(false);
  });

  it('refuses an empty secret or an empty rotation list instead of accepting a forgeable signature', () => {
    const forged = reference(body, '');
    expect(() => verifySignature(body, forged, '')).toThrow(TypeError);
    expect(() => verifySignature(body, forged, ['whsec_new', ''])).toThrow(/`secrets`/);
    expect(() => verifySignature(body, forged, [])).toThrow(/`secrets`/);
  });

  it('refuses a parsed object as the body, pointing at the raw bytes', () => {
    expect(() => verifySignature(JSON.parse(body) as unknown as string, header, secret)).toThrow(/raw request body/);
    expect(() => sign({ a: 1 } as unknown as string, secret)).toThrow(/raw request body/);
  });

  it('accepts upper-case hex', () => {
    expect(verifySignature(body, `sha256=${header.slice(7).toUpperCase()}`, secret)).toBe(true);
  });

  it('refuses a signature that differs in any one digit, the first and last included', () => {
    const hex = header.slice(7);
    for (let i = 0; i < 64; i++) {
      const digit = hex[i] === '0' ? '1' : '0';
      expect(verifySignature(body, `sha256=${hex.slice(0, i)}${digit}${hex.slice(i + 1)}`, secret)).toBe(false);
    }
  });

  it('refuses characters that only look like hex digits once case is folded away', () => {
    // The digest is compared with the digits as written (case folded by setting 0x20), so every
    // character must first be checked to be a hex digit: these fold, or truncate, onto real digits.
    const hex = header.slice(7);
    const at = hex.search(/[0-9]/);
    const digit = hex.charCodeAt(at);
    for (const lookalike of [String.fromCharCode(digit & ~0x20), String.fromCharCode(digit + 0x100), String.fromCharCode(digit + 0xff00)]) {
      const forged = `sha256=${hex.slice(0, at)}${lookalike}${hex.slice(at + 1)}`;
      expect(verifySignature(body, forged, secret)).toBe(false);
      expect(parseSignatureHeader(forged)).toBeNull();
    }
  });

  it.each([
    ['no prefix', header.slice(7)],
    ['another algorithm', header.replace('sha256=', 'sha1=')],
    ['non-hex', `sha256=${'g'.repeat(64)}`],
    ['too short', header.slice(0, -2)],
    ['too long', `${header}00`],
    ['odd length', `${header}0`],
    ['several values as an array', [header, header]],
    ['several values joined', `${header}, ${header}`],
    ['empty', ''],
    ['not a string', 42],
    ['undefined', undefined],
  ])('rejects a malformed header (%s) without throwing', (_name, value) => {
    expect(() => verifySignature(body, value, secret)).not.toThrow();
    expect(verifySignature(body, value, secret)).toBe(false);
    expect(parseSignatureHeader(value)).toBeNull();
  });
});
