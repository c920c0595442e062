import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { LookupFunction } from '../../../src/http/outbound-guard.js';
import { guardedFetch, OutboundRefusedError, publicHttpsFault } from '../../../src/service/core/outbound-fetch.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function countingPort() {
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

/** A DNS that answers every name with `address`, as a rebinding attacker's would. */
const answering = (address: string): LookupFunction => (_host, options, callback) =>
  options.all ? callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]) : callback(null, address, address.includes(':') ? 6 : 4);

describe('guardedFetch', () => {
  it('refuses a name that resolves to a loopback or private address before the socket opens', async () => {
    const target = await countingPort();
    for (const address of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '::1', '::ffff:127.0.0.1']) {
      const fetchIt = guardedFetch({ lookup: answering(address) });
      await expect(fetchIt(`https://rebinding.example:${target.port}/client.json`), address).rejects.toThrow();
    }
    expect(target.connections()).toBe(0);
  });

  it('checks the URL before any transport: https only, no credentials, no literal private address, no localhost', async () => {
    const reached: string[] = [];
    const fetchIt = guardedFetch({ transport: (async (url: string | URL) => (reached.push(String(url)), new Response('{}'))) as typeof fetch });
    for (const url of ['http://assistant.example/c.json', 'https://user:pw@assistant.example/c.json', 'https://127.1/c.json', 'https://[fd00::1]/c.json', 'https://localhost/c.json', 'https://x.localhost/c.json']) {
      await expect(fetchIt(url), url).rejects.toBeInstanceOf(OutboundRefusedError);
    }
    expect(reached).toEqual([]);
    expect((await fetchIt('https://assistant.example/c.json')).status).toBe(200);
    expect(reached).toEqual(['https://assistant.example/c.json']);
  });

  it('names why', () => {
    expect(publicHttpsFault(new URL('https://0x7f000001/'))).toBe('a loopback address');
    expect(publicHttpsFault(new URL('https://[::ffff:169.254.169.254]/'))).toBe('a metadata address');
    expect(publicHttpsFault(new URL('https://93.184.215.14/'))).toBeNull();
  });
});
