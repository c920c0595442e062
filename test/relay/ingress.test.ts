import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchIngress, splitTarget } from '../../src/relay/ingress.js';

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
