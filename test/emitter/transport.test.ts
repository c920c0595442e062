import { afterEach, describe, expect, it } from 'vitest';
import { createHttpTransport, RESPONSE_KEEP_BYTES } from '../../src/emitter/transport.js';
import { InvalidCallbackUrlError } from 'cliphook';
import { startServer, type TestServer } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function transport(allowPrivateNetworks = true) {
  const send = createHttpTransport({ allowPrivateNetworks, maxSockets: 4 });
  cleanups.push(() => send.close());
  return send;
}
function serve(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  return startServer(handler).then((server) => {
    cleanups.push(() => server.close());
    return server;
  });
}
const request = (url: string, body = '{"a":1}') => ({ url: new URL(url), headers: { 'content-type': 'application/json' }, body: Buffer.from(body), signal: new AbortController().signal });

describe('the http transport', () => {
  it('POSTs the exact bytes with a content-length', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const body = '{"prompt":"ünïcödé 🦊"}';
    const reply = await transport()(request(server.url, body));
    expect(reply).toEqual({ status: 200, body: Buffer.from('ok') });
    expect(server.received[0]!.body).toBe(body);
    expect(server.received[0]!.headers['content-length']).toBe(String(Buffer.byteLength(body)));
  });

  it('keeps the first 1 KiB of a large response and the status, without reading it all', async () => {
    let written = 0;
    const server = await serve((_req, res) => {
      res.writeHead(500);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const more = (): void => {
        while (written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      more();
    });
    const reply = await transport()(request(server.url));
    expect(reply.status).toBe(500);
    expect(reply.body).toHaveLength(RESPONSE_KEEP_BYTES);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('does not follow a redirect', async () => {
    const server = await serve((req, res) => {
      res.writeHead(307, { location: '/elsewhere' });
      res.end();
    });
    expect((await transport()(request(server.url))).status).toBe(307);
    expect(server.received.map((r) => r.url)).toEqual(['/webhooks']);
  });

  it('refuses a literal private address when private networks are not allowed, before connecting', async () => {
    const server = await serve((_req, res) => res.end());
    await expect(transport(false)(request(server.url))).rejects.toBeInstanceOf(InvalidCallbackUrlError);
    expect(server.received).toHaveLength(0);
  });
});
