// Issue 10, finding 3: after a drop, work for the dead connection is dropped at once and the new
// connection's catch-up does not wait behind it.
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { connectListener } from 'cliphook';
import { encodeFrame, parseClientFrame, type EventFrame } from '../../src/relay/frames.js';
import { listen } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const backlogFrame = (seq: number): EventFrame => ({
  type: 'event', seq, receivedAt: Date.now(), method: 'POST', path: '', query: '', headers: [], body: Buffer.from(`e${seq}`), backlog: true, replay: false,
});

it('drops the queued catch-up of a dead connection and starts the new one at once', async () => {
  // A relay that sends the same three buffered events on every connection and records the replies per connection.
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((resolve) => wss.once('listening', resolve));
  cleanups.push(() => new Promise((resolve) => wss.close(resolve)));
  const sockets: WebSocket[] = [];
  const replies: Array<{ connection: number; seq: number }> = [];
  let secondCaughtUp!: () => void;
  const caughtUp = new Promise<void>((resolve) => (secondCaughtUp = resolve));
  wss.on('connection', (socket) => {
    const connection = sockets.push(socket);
    socket.on('message', (data, isBinary) => {
      const frame = parseClientFrame(data, isBinary);
      if (frame.type !== 'reply') return;
      replies.push({ connection, seq: frame.seq });
      if (connection === 2 && frame.seq === 3) secondCaughtUp();
    });
    socket.send(JSON.stringify({ type: 'hello', channel: 'c', listener: `l${connection}`, pingIntervalMs: 10_000 }));
    for (const seq of [1, 2, 3]) socket.send(encodeFrame(backlogFrame(seq)));
  });

  // The local app holds its first request (a slow handler) and answers the others at once.
  const seen: string[] = [];
  let release!: () => void;
  let firstArrived!: () => void;
  const first = new Promise<void>((resolve) => (firstArrived = resolve));
  const app = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push(Buffer.concat(chunks).toString());
      if (seen.length > 1) return void res.end('ok');
      release = () => res.end('late');
      firstArrived();
    });
  });
  cleanups.push(app.close);

  const listener = await connectListener({
    relayUrl: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`, channel: 'c', token: 't', forwardTo: app.url,
    reconnect: { minTimeout: 1, maxTimeout: 1, randomize: false },
  });
  cleanups.push(() => listener.close());
  let events = 0;
  listener.on('event', () => events++);
  await first; // e1 of the first connection is at the app; e2 and e3 wait behind it
  sockets[0]!.terminate();
  await caughtUp; // the second connection's catch-up ran while the first request still hangs
  expect(seen).toEqual(['e1', 'e1', 'e2', 'e3']);
  expect(replies).toEqual([1, 2, 3].map((seq) => ({ connection: 2, seq })));

  const late = new Promise((resolve) => listener.once('reply', resolve));
  release();
  await late;
  await new Promise((resolve) => setImmediate(resolve)); // the old chain would go on in the next microtasks
  // The dead connection's e2 and e3 were never forwarded, and its late reply went nowhere.
  expect(events).toBe(4);
  expect(seen).toHaveLength(4);
  expect(replies).toHaveLength(3);
});
