// listen's lean HTTP/1.1 client for the local app (issue 23): the reply as node:http read it, however the
// bytes are cut into packets, keep-alive reuse, and every way a reply can be wrong.
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createForwarder, type Forwarder } from '../../src/relay/forward.js';
import type { EventFrame } from '../../src/relay/frames.js';
import { LocalHttpClient } from '../../src/relay/local-http.js';
import { MAX_HEAD_BYTES, ReplyParser } from '../../src/relay/reply-parser.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every way to cut `text` in two, and byte by byte: the parser's answer must not depend on the packets. */
function parseInPieces(text: string, head = false, max = 1 << 20) {
  const bytes = Buffer.from(text, 'latin1');
  const cuts = [[bytes], ...Array.from({ length: bytes.length - 1 }, (_, i) => [bytes.subarray(0, i + 1), bytes.subarray(i + 1)]), [...bytes].map((byte) => Buffer.from([byte]))];
  const results = cuts.map((pieces) => {
    const parser = new ReplyParser(head, max);
    for (const [i, piece] of pieces.entries()) {
      const reply = parser.push(piece);
      if (reply) return { ...reply, body: reply.body.toString('latin1'), unread: pieces.length - i - 1 };
    }
    return null;
  });
  for (const result of results) expect(result).toEqual(results[0]);
  return results[0];
}

describe('ReplyParser', () => {
  it('reads a Content-Length reply, headers raw and in order, values trimmed', () => {
    expect(parseInPieces('HTTP/1.1 201 Created\r\nX-One:  a \r\nx-one: b\r\nContent-Length: 5\r\n\r\nhello')).toEqual({
      status: 201, headers: ['X-One', 'a', 'x-one', 'b', 'Content-Length', '5'], body: 'hello', reusable: true, unread: 0,
    });
  });

  it('reads a chunked reply with extensions and trailers, which it does not forward', () => {
    const reply = parseInPieces('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n');
    expect(reply).toMatchObject({ status: 200, body: 'hello world', reusable: true });
  });

  it('skips interim 1xx replies and reads the final one', () => {
    expect(parseInPieces('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')).toMatchObject({ status: 200, headers: ['Content-Length', '2'], body: 'ok' });
  });

  it('reads no body after a HEAD, a 204 or a 304, whatever Content-Length says', () => {
    expect(parseInPieces('HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n', true)).toMatchObject({ status: 200, body: '', reusable: true });
    expect(parseInPieces('HTTP/1.1 204 No Content\r\n\r\n')).toMatchObject({ status: 204, body: '' });
    expect(parseInPieces('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n')).toMatchObject({ status: 304, body: '' });
  });

  it('keeps a connection only when HTTP/1.x says so and nothing follows the reply', () => {
    expect(parseInPieces('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ reusable: false });
    expect(parseInPieces('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ reusable: false });
    expect(parseInPieces('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ reusable: true });
    const parser = new ReplyParser(false, 100);
    expect(parser.push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1'))).toMatchObject({ body: Buffer.from('x'), reusable: false });
  });

  it('reads a body without a length until the connection closes', () => {
    const parser = new ReplyParser(false, 100);
    expect(parser.push(Buffer.from('HTTP/1.1 200 OK\r\n\r\npart one, '))).toBeNull();
    expect(parser.push(Buffer.from('part two'))).toBeNull();
    expect(parser.end()).toMatchObject({ status: 200, body: Buffer.from('part one, part two'), reusable: false });
  });

  it('refuses what is not HTTP/1.x, a bad header, conflicting lengths, a bad chunk, and a close mid-reply', () => {
    const fails = (text: string) => {
      try {
        new ReplyParser(false, 100).push(Buffer.from(text, 'latin1'));
      } catch (error) {
        return (error as { code: string }).code;
      }
      return 'no error';
    };
    expect(fails('HTTP/2 200 OK\r\n\r\n')).toBe('HPE_INVALID_CONSTANT');
    expect(fails('SSH-2.0-OpenSSH\r\n\r\n')).toBe('HPE_INVALID_CONSTANT');
    expect(fails('HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n')).toBe('HPE_INVALID_HEADER_TOKEN');
    expect(fails('HTTP/1.1 200 OK\r\n folded\r\n\r\n')).toBe('HPE_INVALID_HEADER_TOKEN');
    expect(fails('HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n')).toBe('HPE_INVALID_HEADER_TOKEN');
    expect(fails('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n')).toBe('HPE_UNEXPECTED_CONTENT_LENGTH');
    expect(fails('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n')).toBe('HPE_INVALID_CONTENT_LENGTH');
    expect(fails('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).toBe('HPE_INVALID_CHUNK_SIZE');
    expect(fails(`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(20_000)}`)).toBe('HPE_HEADER_OVERFLOW');
    const cut = new ReplyParser(false, 100);
    cut.push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    expect(() => cut.end()).toThrow(expect.objectContaining({ code: 'ECONNRESET', message: 'socket hang up' }));
  });

  it('stops at the body cap: a Content-Length over it at once, a chunked body as it passes it', () => {
    expect(() => new ReplyParser(false, 10).push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n'))).toThrow(/larger than 10 bytes/);
    const chunked = new ReplyParser(false, 10);
    expect(chunked.push(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n'))).toBeNull();
    expect(() => chunked.push(Buffer.from('6\r\n'))).toThrow(/larger than 10 bytes/);
  });
});

/** A local app written byte by byte: `answer` gets each request's bytes and the socket. */
async function rawApp(answer: (request: string, socket: Socket) => void) {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (data) => answer(data.toString('latin1'), socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets };
}

function forwarder(url: string, timeoutMs = 5_000, maxReplyBytes = 1 << 20): Forwarder {
  const created = createForwarder(new URL(url), timeoutMs, maxReplyBytes);
  cleanups.push(() => created.close());
  return created;
}

const event = (overrides: Partial<EventFrame> = {}): EventFrame => ({
  type: 'event', seq: 1, receivedAt: 0, method: 'POST', path: '', query: '', headers: ['Content-Type', 'application/json'], body: Buffer.from('{"a":1}'), backlog: false, replay: false, ...overrides,
});

describe('the local hop over the lean client', () => {
  it('sends the request as node:http sent it, and reuses one connection for requests one after another', async () => {
    const requests: string[] = [];
    const app = await rawApp((request, socket) => {
      requests.push(request);
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    const hop = forwarder(`${app.url}/hooks`);
    for (let i = 0; i < 3; i++) expect((await hop.forward(event())).body.toString()).toBe('ok');
    expect(app.sockets.size).toBe(1);
    expect(requests[0]).toBe(`POST /hooks HTTP/1.1\r\nContent-Type: application/json\r\nHost: ${new URL(app.url).host}\r\nContent-Length: 7\r\nConnection: keep-alive\r\n\r\n{"a":1}`);
  });

  it('opens a new connection after a reply that closes its own, and after the app closed an idle one', async () => {
    let replies = 0;
    const app = await rawApp((_request, socket) => {
      replies++;
      if (replies === 1) socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
    });
    const hop = forwarder(app.url);
    await hop.forward(event());
    await hop.forward(event());
    expect(app.sockets.size).toBe(2);
    // The app closes the idle connection (as a server's keep-alive timeout does): the next request is not lost to it.
    const closed = [...app.sockets].filter((socket) => !socket.destroyed).map((socket) => once(socket, 'close'));
    for (const socket of app.sockets) socket.end();
    // The client saw the app's FIN and let the connection go: what a keep-alive timeout leaves behind.
    await Promise.all(closed);
    expect((await hop.forward(event())).status).toBe(200);
  });

  it('fails with local_unreachable for a broken reply, a close mid-reply, and a reply over the cap', async () => {
    const replies = ['NOPE\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', `HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n${'x'.repeat(2000)}`];
    const app = await rawApp((_request, socket) => {
      const reply = replies.shift()!;
      if (reply.endsWith('abc')) socket.end(reply);
      else socket.write(reply);
    });
    const hop = forwarder(app.url, 5_000, 1000);
    await expect(hop.forward(event())).rejects.toMatchObject({ code: 'local_unreachable', message: 'HPE_INVALID_CONSTANT: Parse Error: Expected HTTP/' });
    await expect(hop.forward(event())).rejects.toMatchObject({ code: 'local_unreachable', message: 'ECONNRESET: socket hang up' });
    await expect(hop.forward(event())).rejects.toMatchObject({ code: 'local_unreachable', message: 'the local reply is larger than 1000 bytes' });
  });

  it('fails with local_timeout and drops the connection when the app does not answer in time', async () => {
    const app = await rawApp(() => undefined);
    await expect(forwarder(app.url, 100).forward(event())).rejects.toMatchObject({ code: 'local_timeout', message: 'no reply within 100 ms' });
    // The forwarder dropped it: the app's side ends (a connection left open would hang here, failing the test).
    await Promise.all([...app.sockets].map((socket) => (socket.readableEnded ? undefined : once(socket, 'end'))));
    expect(app.sockets.size).toBe(1);
  });

  it('carries 64 requests at once to a node:http app, each reply to its own request', async () => {
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => res.end(req.headers['x-n']));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    });
    const hop = forwarder(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const bodies = await Promise.all(Array.from({ length: 64 }, (_, n) => hop.forward(event({ headers: ['X-N', String(n)] })).then((reply) => reply.body.toString())));
    expect(bodies).toEqual(Array.from({ length: 64 }, (_, n) => String(n)));
  });
});

// ---------------------------------------------------------------------------------------------------
// RFC 9112 §6 against a raw app (issue 23's review of the lean client): each reply, written as exact bytes,
// gives the bytes node:http gave or a clear error, never a hang, never another reply's bytes, never
// unbounded memory; and a connection is reused only after a reply whose end is certain.

type Outcome = { status: number; headers: string[]; body: string; reusable: boolean } | { error: string; message: string };

/** One request over `client`; a hang shows as `{ error: 'HANG' }` after `patienceMs`. */
function send(client: LocalHttpClient, options: { method?: string; body?: Buffer; patienceMs?: number } = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      resolve({ error: 'HANG', message: '' });
      exchange.abort(new Error('hang'));
    }, options.patienceMs ?? 2_000);
    const exchange = client.request(options.method ?? 'POST', '/hooks', ['Content-Type', 'application/json'], options.body ?? Buffer.from('{"a":1}'), (error, reply) => {
      clearTimeout(timer);
      if (error) return resolve({ error: (error as Error & { code: string }).code, message: error.message });
      resolve({ status: reply!.status, headers: reply!.headers, body: reply!.body.toString('latin1'), reusable: reply!.reusable });
    });
  });
}

/**
 * A raw app that answers the n-th request it reads (any connection) with `replies[n]`: bytes to write, or
 * bytes to write and then close (`{ end }`), or nothing (`null`: it keeps the connection open, silent).
 */
async function scripted(replies: Array<string | { end: string } | null>, maxReplyBytes = 1 << 20) {
  let n = 0;
  const app = await rawApp((_request, socket) => {
    const reply = replies[n++];
    if (reply === undefined || reply === null) return;
    if (typeof reply === 'string') socket.write(reply, 'latin1');
    else socket.end(reply.end, 'latin1');
  });
  const client = new LocalHttpClient(new URL(app.url), maxReplyBytes);
  cleanups.push(() => client.close());
  return { client, sockets: app.sockets, requests: () => n };
}

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext';
const next = { status: 200, headers: ['Content-Length', '4'], body: 'next', reusable: true };

describe('the lean client against RFC 9112 §6, reply by reply', () => {
  it('chunked: extensions (quoted, with spaces) and trailers are read past, hex in either case, leading zeros; the connection is reused', async () => {
    const app = await scripted([
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b;c="d e"\r\nhello\r\n1;x\r\n \r\na\r\n0123456789\r\nA\r\nabcdefghij\r\n0;last=1\r\nX-Checksum: abc\r\nX-Other: 2\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000000005\r\nhello\r\n0000\r\n\r\n',
      OK,
    ]);
    expect(await send(app.client)).toEqual({ status: 200, headers: ['Transfer-Encoding', 'chunked'], body: 'hello 0123456789abcdefghij', reusable: true });
    expect(await send(app.client)).toMatchObject({ body: 'hello', reusable: true });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(1);
  });

  it('chunked: a size that overflows, one over the cap, whitespace or a bare LF in the size line, a bare LF in an extension are errors at once', async () => {
    const chunked = (rest: string) => `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${rest}`;
    const app = await scripted([
      chunked('10000000000000005\r\nhello\r\n0\r\n\r\n'),
      chunked('FFFFFFFFFFFF\r\nhello'), // in range, but over the cap: no waiting for the bytes
      chunked('5 \r\nhello\r\n0\r\n\r\n'),
      chunked(' 5\r\nhello\r\n0\r\n\r\n'),
      chunked('5\nhello\r\n0\r\n\r\n'),
      chunked('5;a\nb\r\nhello\r\n0\r\n\r\n'),
      chunked('5;a\x01\r\nhello\r\n0\r\n\r\n'),
      chunked('5\r\nhelloXX0\r\n\r\n'),
      chunked('5\nhello'), // and the app waits: the bare LF is refused now, not at the deadline
      chunked('-5\r\nhello\r\n0\r\n\r\n'),
      chunked('0x5\r\nhello\r\n0\r\n\r\n'),
      chunked('\r\n'),
      OK,
    ]);
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_CHUNK_SIZE', message: 'Parse Error: Chunk size overflow' });
    expect(await send(app.client)).toMatchObject({ error: 'TOO_LARGE' });
    for (let i = 0; i < 2; i++) expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_CHUNK_SIZE' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_CR_EXPECTED' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_CR_EXPECTED' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_CHUNK_EXTENSIONS' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_STRICT' });
    expect(await send(app.client, { patienceMs: 1_000 })).toMatchObject({ error: 'HPE_CR_EXPECTED' });
    for (let i = 0; i < 3; i++) expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_CHUNK_SIZE' });
    // No connection is reused after an error: each reply had its own, and so has the last.
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(13);
  });

  it('chunked: a bad trailer is an error, and trailers are bounded like a head', async () => {
    const chunked = (trailers: string) => `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n${trailers}`;
    const app = await scripted([
      chunked('Bad Trailer: x\r\n\r\n'),
      chunked('X: a\nY: b\r\n\r\n'),
      chunked(' folded\r\n\r\n'),
      chunked(`${'X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(400)}\r\n`),
      OK,
    ]);
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_HEADER_TOKEN' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_CR_EXPECTED' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_HEADER_TOKEN' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_HEADER_OVERFLOW' });
    expect(await send(app.client)).toEqual(next);
  });

  it('Content-Length: repeated (equal or not, as headers or a list), not digits, empty: refused as node:http refuses it; leading zeros read', async () => {
    const length = (headers: string, body = 'hello') => `HTTP/1.1 200 OK\r\n${headers}\r\n\r\n${body}`;
    const app = await scripted([
      length('Content-Length: 5\r\nContent-Length: 5'),
      length('Content-Length: 5\r\nContent-Length: 6', 'hello!'),
      length('Content-Length: 5, 5'),
      length('Content-Length: 5a'),
      length('Content-Length: +5'),
      length('Content-Length: 0x5'),
      length('Content-Length: -5'),
      length('Content-Length: '),
      length('Content-Length: 005'),
      OK,
    ]);
    for (let i = 0; i < 2; i++) expect(await send(app.client)).toMatchObject({ error: 'HPE_UNEXPECTED_CONTENT_LENGTH', message: 'Parse Error: Duplicate Content-Length' });
    for (let i = 0; i < 5; i++) expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_CONTENT_LENGTH' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_CONTENT_LENGTH', message: 'Parse Error: Empty Content-Length' });
    expect(await send(app.client)).toEqual({ status: 200, headers: ['Content-Length', '005'], body: 'hello', reusable: true });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(9);
  });

  it('Content-Length and Transfer-Encoding together are refused (either order), and the connection is not reused', async () => {
    const app = await scripted([
      'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      OK,
    ]);
    for (let i = 0; i < 2; i++) expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_TRANSFER_ENCODING' });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(3);
  });

  it('Transfer-Encoding not ending in chunked runs until the close; chunked in an HTTP/1.0 reply is read but the connection is not kept', async () => {
    const app = await scripted([
      { end: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello' },
      { end: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n5\r\nhello' },
      'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      OK,
    ]);
    expect(await send(app.client)).toMatchObject({ status: 200, body: 'hello', reusable: false });
    expect(await send(app.client)).toMatchObject({ status: 200, body: '5\r\nhello', reusable: false });
    expect(await send(app.client)).toMatchObject({ status: 200, body: 'hello', reusable: false });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(4);
  });

  it('no body after HEAD, 204 or 304 whatever the headers say; bytes after one mean the connection is not reused', async () => {
    const app = await scripted([
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n',
      'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n',
      'HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n',
      'HTTP/1.1 204 No Content\r\n\r\nhello',
      OK,
    ]);
    expect(await send(app.client, { method: 'HEAD', body: Buffer.alloc(0) })).toEqual({ status: 200, headers: ['Content-Length', '5'], body: '', reusable: true });
    expect(await send(app.client)).toEqual({ status: 204, headers: ['Content-Length', '5'], body: '', reusable: true });
    expect(await send(app.client)).toEqual({ status: 304, headers: ['Transfer-Encoding', 'chunked'], body: '', reusable: true });
    expect(await send(app.client)).toEqual({ status: 204, headers: [], body: '', reusable: false });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(2);
  });

  it('skips 100 Continue and 103 Early Hints (their headers checked too); refuses a 101 nobody asked for', async () => {
    const app = await scripted([
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 103 Early Hints\r\nBad Link: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nabc',
      OK,
    ]);
    expect(await send(app.client)).toEqual({ status: 200, headers: ['Content-Length', '2'], body: 'ok', reusable: true });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_HEADER_TOKEN' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_UNEXPECTED_UPGRADE' });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(3);
  });

  it('a body without a length runs until the close; Connection: close (or close with keep-alive in HTTP/1.0) ends the connection', async () => {
    const app = await scripted([
      { end: 'HTTP/1.1 200 OK\r\n\r\nhello world' },
      'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok',
      OK,
    ]);
    expect(await send(app.client)).toEqual({ status: 200, headers: [], body: 'hello world', reusable: false });
    for (let i = 0; i < 3; i++) expect(await send(app.client)).toMatchObject({ body: 'ok', reusable: false });
    expect(await send(app.client)).toMatchObject({ body: 'ok', reusable: true });
    expect(await send(app.client)).toEqual(next);
    expect(app.sockets.size).toBe(5);
  });

  it('bounds: a head over MAX_HEAD_BYTES (with or without its end), a body over the cap by Content-Length, chunks or until the close', async () => {
    const pad = `X-Pad: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n`;
    const app = await scripted(
      [
        `HTTP/1.1 200 OK\r\n${pad}Content-Length: 2\r\n\r\nok`,
        `HTTP/1.1 200 OK\r\n${pad}`, // and the app waits
        'HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n',
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${`64\r\n${'x'.repeat(100)}\r\n`.repeat(11)}`, // 1,100 bytes, and no end
        `HTTP/1.1 200 OK\r\n\r\n${'x'.repeat(1001)}`, // and the app waits
        OK,
      ],
      1000,
    );
    expect(await send(app.client)).toMatchObject({ error: 'HPE_HEADER_OVERFLOW' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_HEADER_OVERFLOW' });
    for (let i = 0; i < 3; i++) expect(await send(app.client)).toMatchObject({ error: 'TOO_LARGE', message: 'the local reply is larger than 1000 bytes' });
    expect(await send(app.client)).toEqual(next);
  });

  it('the app closing mid-head, mid-body, mid-chunk or mid-trailers is an error, not a short reply', async () => {
    const app = await scripted([
      { end: 'HTTP/1.1 200 OK\r\nContent-Le' },
      { end: 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello' },
      { end: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel' },
      { end: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: 1\r\n' },
      { end: '' },
      OK,
    ]);
    for (let i = 0; i < 5; i++) expect(await send(app.client)).toMatchObject({ error: 'ECONNRESET', message: 'socket hang up' });
    expect(await send(app.client)).toEqual(next);
  });

  it('header lines: obs-fold, bare LF (even when the app then waits), bare CR, space before the colon are errors', async () => {
    const app = await scripted([
      'HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 200 OK\nContent-Length: 2\n\nok',
      'HTTP/1.1 200 OK\r\nX-A: a\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok',
      'HTTP/1.1 200 OK\r\nX-A: a\rX',
      OK,
    ]);
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_HEADER_TOKEN' });
    expect(await send(app.client, { patienceMs: 1_000 })).toMatchObject({ error: 'HPE_CR_EXPECTED' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_CR_EXPECTED' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_LF_EXPECTED' });
    expect(await send(app.client)).toMatchObject({ error: 'HPE_INVALID_HEADER_TOKEN' });
    expect(await send(app.client, { patienceMs: 1_000 })).toMatchObject({ error: 'HPE_LF_EXPECTED' });
    expect(await send(app.client)).toEqual(next);
  });

  it('bytes the app sends after a reply, once idle, do not become the next request\'s reply', async () => {
    let first: Socket | undefined;
    const app = await rawApp((_request, socket) => {
      if (!first) {
        first = socket;
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      } else socket.write(OK);
    });
    const client = new LocalHttpClient(new URL(app.url), 1 << 20);
    cleanups.push(() => client.close());
    expect(await send(client)).toMatchObject({ body: 'ok', reusable: true });
    // Once the reply is taken and the connection idle, the app speaks unasked: the client drops that connection.
    const closed = once(first!, 'close');
    first!.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil');
    await closed;
    expect(await send(client)).toEqual(next);
    expect(app.sockets.size).toBe(2);
  });

  it('a reply that comes before the request is all written is given, but the connection is not reused (the rest of the body would reach the app as a request)', async () => {
    // The app answers at the first bytes, stops reading, then reads on and takes whatever comes as requests.
    let connection = 0;
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      const n = ++connection;
      let first = true;
      socket.on('data', () => {
        if (n > 1) return void socket.write(OK);
        if (!first) return void socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwrong');
        first = false;
        socket.write('HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n');
        socket.pause();
        setTimeout(() => socket.resume(), 100);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    });
    const client = new LocalHttpClient(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), 1 << 20);
    cleanups.push(() => client.close());
    expect(await send(client, { body: Buffer.alloc(32 << 20, 0x61) })).toEqual({ status: 413, headers: ['Content-Length', '0'], body: '', reusable: true });
    expect(await send(client)).toEqual(next);
    expect(connection).toBe(2);
  });
});

describe('ReplyParser: the new cases cut every way', () => {
  it('reads leading zeros, extensions and trailers the same whatever the packets', () => {
    expect(parseInPieces('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0005;a="b; c"\r\nhello\r\n00;z\r\nT: 1\r\n\r\n')).toMatchObject({ status: 200, body: 'hello', reusable: true, unread: 0 });
  });
});
