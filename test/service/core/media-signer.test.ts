import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MEDIA_FILE, MEDIA_LINK_TTL_MS, MediaSigner, parseRange } from '../../../src/service/core/media-signer.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const signer = new MediaSigner('media-secret-0123456789');

function query(link: string) {
  const url = new URL(link, 'http://127.0.0.1');
  return { exp: url.searchParams.get('exp') ?? undefined, sig: url.searchParams.get('sig') ?? undefined, path: url.pathname };
}

describe('signed media links (spec 4.18)', () => {
  it('works for 7 days, then is 410 link_expired', () => {
    const { exp, sig, path } = query(signer.link('42.mp4', NOW));
    expect(path).toBe('/v1/media/42.mp4');
    expect(signer.check('42.mp4', exp, sig, NOW)).toBe('ok');
    expect(signer.check('42.mp4', exp, sig, NOW + MEDIA_LINK_TTL_MS - 1000)).toBe('ok');
    expect(signer.check('42.mp4', exp, sig, NOW + MEDIA_LINK_TTL_MS)).toBe('link_expired');
  });

  it('signs the file name and expiry with HMAC-SHA256 of the secret as text: links made before a restart still check', () => {
    const { exp, sig } = query(signer.link('42.mp4', NOW));
    expect(sig).toBe(createHmac('sha256', 'media-secret-0123456789').update(`42.mp4\n${exp}`).digest('hex'));
    // A non-ASCII secret is its UTF-8 bytes, as a string key to createHmac always was.
    const accented = new MediaSigner('sécret-de-média-0123456789');
    const link = query(accented.link('7.jpg', NOW));
    expect(link.sig).toBe(createHmac('sha256', 'sécret-de-média-0123456789').update(`7.jpg\n${link.exp}`).digest('hex'));
  });

  it('is 403 invalid_signature when tampered with: another file, another expiry, a changed, missing or malformed sig', () => {
    const { exp, sig } = query(signer.link('42.mp4', NOW));
    expect(signer.check('43.mp4', exp, sig, NOW)).toBe('invalid_signature');
    expect(signer.check('42.jpg', exp, sig, NOW)).toBe('invalid_signature');
    expect(signer.check('42.mp4', String(Number(exp) + 86_400), sig, NOW)).toBe('invalid_signature');
    const flipped = sig!.slice(0, -1) + (sig!.endsWith('0') ? '1' : '0');
    expect(signer.check('42.mp4', exp, flipped, NOW)).toBe('invalid_signature');
    for (const [e, s] of [[undefined, sig], [exp, undefined], ['abc', sig], [exp, sig!.toUpperCase()], [exp, `${sig}00`], [[exp], sig]]) {
      expect(signer.check('42.mp4', e, s, NOW)).toBe('invalid_signature');
    }
    expect(new MediaSigner('another-secret-abcdefgh').check('42.mp4', exp, sig, NOW)).toBe('invalid_signature');
  });

  it('names files as digits with .mp4 or .jpg', () => {
    for (const ok of ['1.mp4', '42.jpg', '1234567890.mp4']) expect(MEDIA_FILE.test(ok)).toBe(true);
    for (const bad of ['0.mp4', '01.mp4', '42.png', '42.mp4.jpg', 'a.mp4', '42', '../42.mp4']) expect(MEDIA_FILE.test(bad)).toBe(false);
    expect(() => new MediaSigner('short')).toThrow(TypeError);
  });
});

describe('parseRange (RFC 9110 §14)', () => {
  it('reads one range, an open range and a suffix', () => {
    expect(parseRange('bytes=0-99', 1000)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=900-', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=-100', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=-5000', 1000)).toEqual({ start: 0, end: 999 });
    expect(parseRange('bytes=990-5000', 1000)).toEqual({ start: 990, end: 999 });
  });

  it('is unsatisfiable past the end, and whole for what it cannot use', () => {
    expect(parseRange('bytes=1000-', 1000)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', 1000)).toBe('unsatisfiable');
    for (const header of [undefined, 'items=0-1', 'bytes=5-1', 'bytes=0-1,5-9', 'bytes=-', 'bytes=a-b']) expect(parseRange(header, 1000)).toBeNull();
  });
});
