// Issue 20 item 1: `GET /oauth/authorize?client_id=https://<address>/…` is unauthenticated and makes the
// authorization server fetch a client ID metadata document. No spelling of a loopback or private address
// may make it connect, with or without --strict, and an open port must answer exactly as a closed one.
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveApp } from './oauth-helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function start(strict: boolean) {
  return (await serveApp(closers, { strict, warn: () => undefined })).origin;
}

/** A port that accepts TCP connections and counts them (a TLS handshake would start with one). */
async function openPort(): Promise<{ port: number; connections: () => number }> {
  let count = 0;
  const server: TcpServer = createTcpServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// The spellings of issue 20 item 1: every one names this machine.
const SPELLINGS = ['127.0.0.1', '127.1', '0x7f000001', '2130706433', '0177.0.0.1', '0x7f.0.0.1', '127.000.000.001', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:127.0.0.1]', '0', '0.0.0.0', '[::]', '[::1]', 'localhost', 'LOCALHOST', 'localhost.', 'a.localhost'];

async function authorize(origin: string, clientId: string) {
  const url = new URL(`${origin}/oauth/authorize`);
  const params = { client_id: clientId, redirect_uri: 'http://127.0.0.1:9/callback', response_type: 'code', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  const res = await fetch(url, { redirect: 'manual' });
  // The page names the client id, so the port is taken out before comparing two answers.
  return { status: res.status, body: (await res.text()).replace(/:\d+\//g, ':PORT/') };
}

describe('client ID metadata documents never reach this machine', () => {
  for (const strict of [false, true]) {
    it(`refuses every spelling of a loopback address before connecting, open and closed ports alike${strict ? ' (--strict)' : ''}`, async () => {
      const origin = await start(strict);
      const open = await openPort();
      const closed = await closedPort();
      for (const host of SPELLINGS) {
        const atOpen = await authorize(origin, `https://${host}:${open.port}/client.json`);
        const atClosed = await authorize(origin, `https://${host}:${closed}/client.json`);
        expect(atOpen.status, host).toBe(400);
        expect(atOpen.body, host).toContain('invalid_client');
        expect(atClosed, host).toEqual(atOpen);
      }
      expect(open.connections()).toBe(0);
    });
  }
});
