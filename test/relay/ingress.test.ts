import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { targetPath } from '../../src/relay/forward.js';
import { matchIngress, matchIngressTarget, splitTarget } from '../../src/relay/ingress.js';

describe('splitTarget', () => {
  it('gives the pathname and search URL gives, for plain targets and odd ones alike', () => {
    const piece = fc.constantFrom(...'aZ09-_.~!$&\'()*+,;=:@/%?#\\ é"<>`{}|^[]'.split(''), '%2e', '%2E', '..', '/.', '/..');
    const prefix = fc.constantFrom('/in/abc', '/in/a-_9', '/in/', '/in', '/healthz', '/channels');
    fc.assert(
      fc.property(prefix, fc.array(piece, { maxLength: 20 }), (start, pieces) => {
        const target = start + pieces.join('');
        const url = new URL(target, 'http://relay.invalid');
        expect(splitTarget(target)).toEqual({ pathname: url.pathname, search: url.search });
      }),
      { numRuns: 3000 },
    );
  });

  it('feeds matchIngress the extra path and query', () => {
    const { pathname, search } = splitTarget('/in/abc/hooks/v1?x=1&y=%20');
    expect(matchIngress(pathname)).toEqual({ channelId: 'abc', path: '/hooks/v1' });
    expect(search).toBe('?x=1&y=%20');
    expect(splitTarget('/in/abc/../def')).toEqual({ pathname: '/in/def', search: '' });
  });
});

describe('matchIngressTarget', () => {
  it('keeps the extra path and query byte for byte, an empty query\'s `?` included', () => {
    expect(matchIngressTarget('/in/abc?')).toEqual({ channelId: 'abc', path: '', query: '?' });
    expect(matchIngressTarget('/in/abc/a/../b?x=1?y')).toEqual({ channelId: 'abc', path: '/a/../b', query: '?x=1?y' });
    expect(matchIngressTarget('/in/abc/a\\b')).toEqual({ channelId: 'abc', path: '/a\\b', query: '' });
    expect(matchIngressTarget("/in/abc/p|q^{}?q='x'&e=%41%2b+")).toEqual({ channelId: 'abc', path: '/p|q^{}', query: "?q='x'&e=%41%2b+" });
    expect(matchIngressTarget('/in/abc')).toEqual({ channelId: 'abc', path: '', query: '' });
    expect(matchIngressTarget('/in/abc\\x')).toBeNull();
    expect(matchIngressTarget('/in/')).toBeNull();
    expect(matchIngressTarget('/healthz?/in/abc')).toBeNull();
  });

  it('builds the local target by joining strings, never re-normalising', () => {
    const local = new URL('http://127.0.0.1:3000/hook');
    expect(targetPath(local, { path: '', query: '?' })).toBe('/hook?');
    expect(targetPath(local, { path: '/a/../b', query: "?q='x'" })).toBe("/hook/a/../b?q='x'");
    expect(targetPath(local, { path: '/a\\b{}', query: '' })).toBe('/hook/a\\b{}');
    expect(targetPath(new URL('http://127.0.0.1:3000/hook/?a=1'), { path: '/x', query: '?b=2' })).toBe('/hook/x?a=1&b=2');
    expect(targetPath(new URL('http://127.0.0.1:3000/hook?a=1'), { path: '', query: '?' })).toBe('/hook?a=1');
  });
});
