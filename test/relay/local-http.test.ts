// listen's lean HTTP/1.1 client for the local app (issue 23): the reply as node:http read it, however the
// bytes are cut into packets, keep-alive reuse, and every way a reply can be wrong.
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createForwarder, type Forwarder } from '../../src/relay/forward.js';
import type { EventFrame } from '../../src/relay/frames.js';
import { ReplyParser } from '../../src/relay/reply-parser.js';

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
    expect(fails('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n')).toBe('HPE_UNEXPECTED_CONTENT_LENGTH');
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
    for (const socket of app.sockets) socket.end();
    await new Promise((resolve) => setTimeout(resolve, 50));
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
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([...app.sockets].every((socket) => socket.destroyed || socket.readableEnded)).toBe(true);
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
