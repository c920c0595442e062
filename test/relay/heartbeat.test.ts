import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { expect, it } from 'vitest';
import { Heartbeat } from '../../src/relay/heartbeat.js';
import { manualScheduler } from './fixtures.js';

/** Just enough of a ws socket: events, ping() and terminate(). */
function fakeSocket() {
  const socket = Object.assign(new EventEmitter(), { pings: 0, terminated: false, ping() { socket.pings++; }, terminate() { socket.terminated = true; } });
  return socket;
}

it('pings every interval and terminates a socket silent past the deadline, with one timer for all', () => {
  let now = 0;
  const scheduler = manualScheduler();
  let timers = 0;
  const counting = { ...scheduler, setInterval: (callback: () => void) => (timers++, scheduler.setInterval(callback)) };
  const heartbeat = new Heartbeat({ clock: () => now, scheduler: counting, intervalMs: 10_000, deadlineMs: 20_000 });
  const quiet = fakeSocket();
  const chatty = fakeSocket();
  heartbeat.watch(quiet as unknown as WebSocket);
  heartbeat.watch(chatty as unknown as WebSocket);
  expect(timers).toBe(1);

  now = 10_000;
  scheduler.tick();
  expect([quiet.pings, chatty.pings]).toEqual([1, 1]);
  chatty.emit('pong');
  now = 20_000;
  scheduler.tick(); // exactly at the deadline: still alive
  expect(quiet.terminated).toBe(false);
  chatty.emit('message');
  now = 20_001;
  scheduler.tick();
  expect(quiet.terminated).toBe(true);
  expect(chatty.terminated).toBe(false);
  expect(chatty.pings).toBe(3);
  heartbeat.stop();
});

it('forgets a socket once it closes', () => {
  const scheduler = manualScheduler();
  let now = 0;
  const heartbeat = new Heartbeat({ clock: () => now, scheduler, intervalMs: 1, deadlineMs: 2 });
  const socket = fakeSocket();
  heartbeat.watch(socket as unknown as WebSocket);
  socket.emit('close');
  now = 100;
  scheduler.tick();
  expect(socket.terminated).toBe(false);
  expect(socket.pings).toBe(0);
});
