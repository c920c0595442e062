import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelStore } from '../../src/relay/channels.js';
import type { StoredEvent } from '../../src/relay/channel-types.js';
import { FileRelayStore } from '../../src/relay/file-relay-store.js';
import { encodeFrame, parseServerFrame, type ServerFrame } from '../../src/relay/frames.js';
import { Heartbeat, realScheduler } from '../../src/relay/heartbeat.js';
import { Hub } from '../../src/relay/hub.js';
import type { RelayStore } from '../../src/relay/relay-store.js';
import { manualScheduler } from './fixtures.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function event(deliveryId: string): Omit<StoredEvent, 'seq'> {
  return { receivedAt: 0, method: 'POST', path: '', query: '', headers: [], body: Buffer.from(deliveryId), eventName: 'video.completed', deliveryId };
}

/** A hub over a memory store, reached by real WebSockets; `gate` holds every catch-up read until it is opened. */
async function setup() {
  const files = new FileRelayStore(new ChannelStore({ file: false, clock: () => 0, maxEvents: 100, maxBytes: 1e6, maxAgeMs: 1e9, scheduler: realScheduler, lazyCommitMs: 10 }));
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  // The catch-up reads the buffer at once and is sent only when the gate opens: as a slow Redis read would be.
  const store: RelayStore = Object.assign(Object.create(files) as RelayStore, {
    unacked: async (id: string, wants: (stored: StoredEvent) => boolean) => {
      const read = await files.unacked(id, wants);
      await gate;
      return read;
    },
  });
  const scheduler = manualScheduler();
  const hub = new Hub({ store, bus: null, heartbeat: new Heartbeat({ clock: () => 0, scheduler, intervalMs: 1000, deadlineMs: 2000 }), scheduler, responseTimeoutMs: 1000, pingIntervalMs: 1000, maxFrameBytes: 1e6, log: () => undefined });
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer();
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => hub.connect(channel.id, ws, null, socket)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  const channel = (await files.create())!;
  const append = async (deliveryId: string) => {
    const appended = await files.append(channel.id, event(deliveryId), 'none');
    if (appended.kind !== 'stored') throw new Error(appended.kind);
    return appended.event;
  };
  /** A listener that records the frames it gets and replies 200 to an event when told to. */
  const connect = () => {
    const frames: ServerFrame[] = [];
    const socket = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    cleanups.push(() => socket.terminate());
    socket.on('message', (data, isBinary) => frames.push(parseServerFrame(data, isBinary)));
    const reply = (seq: number) => socket.send(encodeFrame({ type: 'reply', seq, status: 200, headers: [], body: Buffer.from(`ok ${seq}`) }));
    /** Resolves once every frame the hub sent so far has arrived: the answer to a replay comes after them. */
    const sync = async () => {
      const ref = `sync-${frames.length}`;
      socket.send(encodeFrame({ type: 'replay', ref }));
      await expect.poll(() => frames.some((frame) => frame.type === 'replay_missing' && frame.ref === ref)).toBe(true);
    };
    return { frames, reply, sync };
  };
  return { hub, open, append, connect, channel };
}

const events = (frames: ServerFrame[]) => frames.flatMap((frame) => (frame.type === 'event' ? [[frame.seq, frame.backlog]] : []));

describe('Hub catch-up and live events', () => {
  it('sends a live event that came during the catch-up after it, once', async () => {
    const { hub, open, append, connect, channel } = await setup();
    await append('dlv_1');
    const { frames, reply, sync } = connect();
    await expect.poll(() => hub.listeners).toBe(1);
    // Stored after the catch-up was read, sent live while the catch-up is still on its way: held, then sent after it.
    const live = await append('dlv_2');
    const answered = hub.deliver(channel.id, live, false);
    open();
    await expect.poll(() => events(frames)).toEqual([[1, true], [2, false]]);
    expect(frames[0]!.type).toBe('hello');
    reply(2);
    expect(await answered).toMatchObject({ kind: 'reply', frame: { seq: 2, status: 200 } });
    await sync();
    expect(events(frames)).toEqual([[1, true], [2, false]]);
  });

  it('does not send again live an event its catch-up carried; the catch-up copy answers the sender', async () => {
    const { hub, open, append, connect, channel } = await setup();
    const first = await append('dlv_1');
    const { frames, reply, sync } = connect();
    open();
    await expect.poll(() => events(frames)).toEqual([[1, true]]);
    // Another relay process stored it before this catch-up was read, and its publish arrives only now.
    const answered = hub.deliver(channel.id, first, false);
    reply(1);
    expect(await answered).toMatchObject({ kind: 'reply', frame: { seq: 1, body: Buffer.from('ok 1') } });
    await sync();
    expect(events(frames)).toEqual([[1, true]]);
  });
});
