import { createHash } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import sharp from 'sharp';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolver } from '../../helpers/resolver.js';
import type { LookupFunction } from '../../../src/http/outbound-guard.js';
import { checkImageTarget, fetchImage, redirectTarget } from '../../../src/service/core/fetch-image.js';
import { version } from '../../../src/version.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

let png: Buffer;
let jpeg: Buffer;
let tiff: Buffer;
beforeAll(async () => {
  const image = () => sharp({ create: { width: 4, height: 4, channels: 3, background: '#f00' } });
  [png, jpeg, tiff] = await Promise.all([image().png().toBuffer(), image().jpeg().toBuffer(), image().tiff().toBuffer()]);
});

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** An HTTP server on 127.0.0.1:0 answering by path, recording each request's headers. */
async function serve(routes: Record<string, Handler>) {
  const requests: IncomingMessage[] = [];
  const server = createHttpServer((req, res) => {
    requests.push(req);
    const handler = routes[req.url ?? ''];
    if (handler) handler(req, res);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
  });
  const port = await listen(server);
  cleanups.push(() => close(server));
  return { origin: `http://127.0.0.1:${port}`, port, requests };
}

/** A bare TCP server that counts connections, to prove none was attempted. */
async function tcpCounter() {
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    socket.destroy();
  });
  const port = await listen(server);
  cleanups.push(() => close(server));
  return { port, connections: () => connections };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function close(server: Server): Promise<void> {
  (server as Partial<ReturnType<typeof createHttpServer>>).closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}


const body = (type: string, bytes: Buffer | string): Handler => (_req, res) => res.writeHead(200, { 'content-type': type }).end(bytes);
const redirect = (location: string, status = 302): Handler => (_req, res) => res.writeHead(status, { location }).end();
const loose = { strict: false };
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('fetchImage, non-strict', () => {
  it('fetches a PNG and a JPEG served locally, with their type, hash and our headers', async () => {
    const { origin, requests } = await serve({ '/cat.png': body('image/png', png), '/cat.jpg': body('application/octet-stream', jpeg) });
    expect(await fetchImage(`${origin}/cat.png`, loose)).toEqual({ ok: true, bytes: png, mime: 'image/png', ext: 'png', sha256: sha256(png) });
    // The type comes from the bytes, not from the server's Content-Type.
    expect(await fetchImage(`${origin}/cat.jpg`, loose)).toEqual({ ok: true, bytes: jpeg, mime: 'image/jpeg', ext: 'jpg', sha256: sha256(jpeg) });
    expect(requests[0]!.headers['user-agent']).toBe(`cliphook-serve/${version}`);
    expect(requests[0]!.headers.accept).toBe('image/*');
  });

  it('refuses a body that is not an image, or an image of a type the service does not take', async () => {
    const { origin } = await serve({ '/cat.png': body('image/png', 'this is text'), '/cat.tiff': body('image/tiff', tiff), '/empty.png': body('image/png', '') });
    expect(await fetchImage(`${origin}/cat.png`, loose)).toMatchObject({ ok: false, code: 'image_fetch_failed', detail: expect.stringContaining('is not an image') });
    expect(await fetchImage(`${origin}/empty.png`, loose)).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('is not an image') });
    expect(await fetchImage(`${origin}/cat.tiff`, loose)).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('image/tiff') });
  });

  it('names the status of a non-2xx answer', async () => {
    const { origin } = await serve({ '/gone.png': (_req, res) => res.writeHead(500).end() });
    expect(await fetchImage(`${origin}/missing.png`, loose)).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('HTTP 404 (Not Found)') });
    expect(await fetchImage(`${origin}/gone.png`, loose)).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('HTTP 500') });
  });

  it('cuts a download past maxBytes at once, and the server sees the connection closed early', async () => {
    const chunk = Buffer.alloc(64 * 1024, 1);
    let sent = 0;
    let serverClosed!: Promise<boolean>;
    const { origin } = await serve({
      '/huge.png': (_req, res) => {
        serverClosed = new Promise((resolve) => res.once('close', () => resolve(res.writableFinished)));
        res.writeHead(200, { 'content-type': 'image/png' });
        // 64 MiB if nobody stops it; written as fast as the client reads.
        const pump = (): void => {
          while (sent < 64 * 1024 * 1024 && !res.destroyed) {
            sent += chunk.byteLength;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      },
      '/declared.png': (_req, res) => res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) }).write(png),
    });
    const result = await fetchImage(`${origin}/huge.png`, { ...loose, maxBytes: 1024 });
    expect(result).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('larger than 1024 bytes') });
    expect(await serverClosed).toBe(false);
    expect(sent).toBeLessThan(16 * 1024 * 1024);
    // A Content-Length past the cap is refused before any of the body is read.
    expect(await fetchImage(`${origin}/declared.png`, { ...loose, maxBytes: 1024 * 1024 })).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('larger than 1 MiB') });
  });

  it('gives up on a stalled server within timeoutMs', async () => {
    const { origin } = await serve({
      '/silent.png': () => {}, // never answers
      '/trickle.png': (_req, res) => res.writeHead(200, { 'content-length': String(png.byteLength) }).write(png.subarray(0, 8)),
    });
    for (const path of ['/silent.png', '/trickle.png']) {
      const started = performance.now();
      const result = await fetchImage(`${origin}${path}`, { ...loose, timeoutMs: 200 });
      expect(result).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('within 200 ms') });
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  it('follows redirects up to maxRedirects, and refuses more or a loop', async () => {
    const { origin } = await serve({
      '/r1': redirect('/r2', 301),
      '/r2': redirect('r3', 307),
      '/r3': redirect('/cat.png', 308),
      '/cat.png': body('image/png', png),
      '/a': redirect('/b'),
      '/b': redirect('/a'),
    });
    expect(await fetchImage(`${origin}/r1`, loose)).toMatchObject({ ok: true, mime: 'image/png', sha256: sha256(png) });
    expect(await fetchImage(`${origin}/r1`, { ...loose, maxRedirects: 2 })).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('more than 2 times') });
    expect(await fetchImage(`${origin}/a`, loose)).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('loop') });
  });

  it('checks each redirect target like the original', async () => {
    const { origin } = await serve({ '/ftp': redirect('ftp://files.example.com/cat.png'), '/creds': redirect('http://user:secret@127.0.0.1/cat.png') });
    expect(await fetchImage(`${origin}/ftp`, loose)).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining('uses ftp') });
    const creds = await fetchImage(`${origin}/creds`, loose);
    expect(creds).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining('credentials') });
    expect(JSON.stringify(creds)).not.toContain('secret');
  });

  it('allows private addresses, and uses an injected lookup for names', async () => {
    const { port } = await serve({ '/cat.png': body('image/png', png) });
    const lookup = resolver('127.0.0.1');
    expect(await fetchImage(`http://images.test:${port}/cat.png`, { ...loose, lookup })).toMatchObject({ ok: true, mime: 'image/png' });
    expect(lookup.calls).toEqual(['images.test']);
  });

  it('turns connection, DNS and TLS errors into image_fetch_failed', async () => {
    const { port } = await serve({ '/cat.png': body('image/png', png) });
    const closed = createTcpServer();
    const freePort = await listen(closed);
    await close(closed);
    expect(await fetchImage(`http://127.0.0.1:${freePort}/cat.png`, loose)).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('refused the connection') });
    const nowhere: LookupFunction = (hostname, _options, callback) => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
    expect(await fetchImage('http://nowhere.test/cat.png', { ...loose, lookup: nowhere })).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('not found in DNS') });
    // TLS spoken to a plain HTTP server fails the handshake.
    const tls = await fetchImage(`https://127.0.0.1:${port}/cat.png`, loose);
    expect(tls).toMatchObject({ code: 'image_fetch_failed', detail: expect.stringContaining('TLS') });
    expect(tls.ok || tls.detail).not.toMatch(/\n|at .*\(/); // one sentence, no stack
  });

  it('refuses URLs that are not http(s), carry credentials or are not absolute', async () => {
    for (const url of ['ftp://files.example.com/cat.png', 'file:///etc/passwd', 'asset://12', 'http://user:pw@127.0.0.1/cat.png', '/cat.png', 'not a url']) {
      const result = await fetchImage(url, loose);
      expect(result, url).toMatchObject({ ok: false, code: 'invalid_image_url' });
      expect(JSON.stringify(result)).not.toContain(':pw@');
    }
  });

  it('throws a TypeError naming a bad option', async () => {
    await expect(fetchImage('http://127.0.0.1/cat.png', { ...loose, maxBytes: 0 })).rejects.toThrow('`maxBytes`');
    await expect(fetchImage('http://127.0.0.1/cat.png', { ...loose, maxRedirects: -1 })).rejects.toThrow(TypeError);
  });
});

describe('fetchImage, strict', () => {
  const strict = { strict: true };

  it('refuses http, and a literal private address without connecting', async () => {
    const { port, connections } = await tcpCounter();
    expect(await fetchImage(`http://127.0.0.1:${port}/cat.png`, strict)).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining('only https') });
    for (const host of ['127.0.0.1', '[::1]', '10.1.2.3', '169.254.169.254', '[::ffff:127.0.0.1]']) {
      expect(await fetchImage(`https://${host}:${port}/cat.png`, strict), host).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining('strict mode refuses') });
    }
    expect(await fetchImage(`https://169.254.169.254/latest/meta-data`, strict)).toMatchObject({ detail: expect.stringContaining('cloud metadata') });
    expect(connections()).toBe(0);
  });

  it('refuses a name that resolves to a private address at connect time (DNS rebinding)', async () => {
    const { port, connections } = await tcpCounter();
    for (const addresses of [['127.0.0.1'], ['93.184.215.14', '192.168.1.7']]) {
      const lookup = resolver(...addresses);
      const result = await fetchImage(`https://images.example.test:${port}/cat.png`, { ...strict, lookup });
      expect(result).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining(`resolves to a `) });
      expect(result.ok || result.detail).toContain(addresses.at(-1));
      expect(lookup.calls).toEqual(['images.example.test']);
    }
    expect(connections()).toBe(0);
  });

  it('checks redirect targets: http or a private address is refused, a relative path is kept', () => {
    const from = new URL('https://cdn.example.com/photos/cat.png');
    expect(redirectTarget(from, 'http://cdn.example.com/cat.png', true)).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining('redirects to http://cdn.example.com/cat.png') });
    expect(redirectTarget(from, '//169.254.169.254/latest', true)).toMatchObject({ code: 'invalid_image_url', detail: expect.stringContaining('cloud metadata') });
    expect(redirectTarget(from, 'https://10.0.0.5/cat.png', true)).toMatchObject({ code: 'invalid_image_url' });
    expect(redirectTarget(from, 'big/cat.png', true)).toEqual({ ok: true, url: new URL('https://cdn.example.com/photos/big/cat.png') });
    expect(redirectTarget(from, 'http://10.0.0.5/cat.png', false)).toMatchObject({ ok: true });
    expect(checkImageTarget('https://cdn.example.com/cat.png', true)).toMatchObject({ ok: true });
  });
});
