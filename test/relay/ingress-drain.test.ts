import { request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createChannel, createRelayServer } from 'cliphook';
import { manualScheduler } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * POSTs `size` bytes over a raw socket, 64 KiB per event-loop turn, and reads only once it has written
 * everything (as many HTTP clients do): resolves with the socket error, if any, and what the relay sent.
 */
function upload(url: string, size: number, chunked: boolean): Promise<{ error: string | null; reply: string }> {
  const { port, hostname, pathname } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let error: string | null = null;
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code ?? failure.message));
    socket.on('close', () => resolve({ error, reply: Buffer.concat(chunks).toString('utf8') }));
    socket.write(`POST ${pathname} HTTP/1.1\r\nHost: x\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`}\r\n\r\n`);
    const piece = Buffer.alloc(64 * 1024, 0x78);
    const framed = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
    let left = size;
    const write = () => {
      if (socket.destroyed) return;
      if (left <= 0) return void (chunked && socket.write('0\r\n\r\n'));
      left -= piece.length;
      if (socket.write(framed)) setImmediate(write);
      else socket.once('drain', write);
    };
    write();
  });
}

describe('relay ingress: a body over the cap', () => {
  for (const chunked of [false, true]) {
    it(`lets a sender writing 5 MiB to a 1 MiB relay read the 413 problem, no EPIPE or reset (${chunked ? 'chunked' : 'Content-Length'})`, async () => {
      const relay = createRelayServer({ file: false, maxBodyBytes: 1024 * 1024 });
      const { url } = await relay.listen(0, '127.0.0.1');
      cleanups.push(() => relay.close());
      const channel = await createChannel(url);
      for (let i = 0; i < 3; i++) {
        // Before the fix the relay closed mid-upload: EPIPE, and no reply at all.
        const { error, reply } = await upload(channel.url, 5 * 1024 * 1024, chunked);
        expect(error).toBeNull();
        expect(reply).toMatch(/^HTTP\/1\.1 413 /);
        expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'body_too_large', status: 413 });
      }
    });
  }

  it('stops draining past its bound and cuts the connection: a stranger cannot keep the relay reading', async () => {
    const scheduler = manualScheduler();
    const relay = createRelayServer({ file: false, maxBodyBytes: 1024, scheduler });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    const channel = await createChannel(url);
    // Announcing more than the drain bound (16 MiB): answered and cut at once, not read.
    const huge = await new Promise<{ status: number } | { error: string }>((resolve) => {
      const req = request(channel.url, { method: 'POST', headers: { 'content-length': String(1024 ** 3) } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode! }));
        res.on('error', () => resolve({ status: res.statusCode! }));
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      req.write(Buffer.alloc(1024));
    });
    expect(huge).toMatchObject({ status: 413 });
    // A slow sender that never finishes: the drain timer (injected) ends it.
    const slow = new Promise<number | string>((resolve) => {
      const req = request(channel.url, { method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      req.write(Buffer.alloc(4096));
    });
    await expect.poll(() => scheduler.pendingTimeouts).toBeGreaterThan(0);
    scheduler.fireTimeouts();
    expect(await slow).toBe(413);
  });
});
