import { expect, it } from 'vitest';
import { endToEnd, rawHeader } from '../../src/relay/headers.js';

it('drops hop-by-hop headers, proxy-*, and those named by Connection; keeps repeats in order', () => {
  const raw = [
    'Host', 'relay', 'Connection', 'keep-alive, X-Hop', 'X-Hop', '1', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked',
    'Content-Length', '3', 'TE', 'trailers', 'Trailer', 'x', 'Upgrade', 'h2c', 'Proxy-Authorization', 'a', 'Proxy-Connection', 'b',
    'X-A', '1', 'x-a', '2', 'X-Service-Signature', 'sha256=00',
  ];
  expect(endToEnd(raw)).toEqual(['X-A', '1', 'x-a', '2', 'X-Service-Signature', 'sha256=00']);
  expect(rawHeader(raw, 'x-a')).toBe('1');
  expect(rawHeader(raw, 'x-none')).toBeUndefined();
});
