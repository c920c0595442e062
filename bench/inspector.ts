// Issue 23: what `listen`'s inspector costs per event, measured in this process, without sockets. The
// relay benchmark measures the same cost as the difference of two `listen` processes, which two shared
// cores make noisy (22-62 % across runs of one build); here the recorder alone takes a listener's `event`
// and `reply` for each event, 64 at a time as a burst would bring them, with its log on disk and without.
//   node --import tsx bench/inspector.ts [--events 20000] [--rounds 5]
// The events are those of bench/relay.ts: a 500-byte signed body, the headers a sender and the relay give it.
import { mkdtempSync, rmSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ListenRecorder as Recorder } from '../src/inspector/listen-recorder.js';
import type { ListenerEvent, ListenerReply } from '../src/relay/listener-types.js';
import { intOption, median, num, table } from './lib.js';
import { code } from './parts/code.js';

// The package as users run it: built first (bench/parts/code.ts).
const { ListenRecorder } = await code<typeof import('../src/inspector/listen-recorder.js')>('inspector/listen-recorder.js');
const { sign } = await code<typeof import('../src/index.js')>('index.js');

const EVENTS = intOption('events', 'BENCH_EVENTS', 20_000);
const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 5);
const IN_FLIGHT = 64;
const BODY = Buffer.from(JSON.stringify({ event: 'video.completed', id: 48213, status: 'done', prompt: 'A red fox trotting through fresh snow'.repeat(12) }));
const HEADERS = ['Content-Type', 'application/json', 'X-Service-Event', 'video.completed', 'X-Service-Signature', sign(BODY, 'whsec_bench'), 'User-Agent', 'autocannon'];
const REPLY_HEADERS = ['content-type', 'application/json', 'content-length', '17', 'Date', 'Fri, 27 Nov 2026 00:00:00 GMT'];
const REPLY_BODY = Buffer.from('{"received":true}');

let seq = 0;

/** `count` events through the recorder, `IN_FLIGHT` at a time with a turn of the event loop between bursts. */
async function drive(listener: EventEmitter, recorder: Recorder, count: number): Promise<void> {
  for (let sent = 0; sent < count; sent += IN_FLIGHT) {
    const events: ListenerEvent[] = [];
    for (let k = 0; k < IN_FLIGHT; k++) {
      const n = ++seq;
      const deliveryId = `dlv_bench_${n}`;
      const event: ListenerEvent = {
        seq: n, method: 'POST', url: 'http://127.0.0.1:3000/webhooks', eventName: 'video.completed', deliveryId, signatureValid: null, resigned: false,
        backlog: false, replay: false, body: Buffer.from(BODY), headers: [...HEADERS, 'X-Service-Delivery', deliveryId], receivedAt: Date.now(),
      };
      listener.emit('event', event);
      events.push(event);
    }
    await new Promise((resolve) => setImmediate(resolve));
    for (const event of events) {
      const reply: ListenerReply = { event, status: 200, error: null, refused: null, stale: false, durationMs: 1, headers: REPLY_HEADERS, body: REPLY_BODY };
      listener.emit('reply', reply);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  await recorder.flush();
}

/** CPU µs per event (user + system) of a recorder, the median of ROUNDS, after a warm-up that fills its book. */
async function measure(withLog: boolean): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-inspector-'));
  try {
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:3000/webhooks', log: withLog ? join(dir, 'listen.events.jsonl') : false, channel: 'bench' });
    const listener = new EventEmitter();
    recorder.attach(listener as never);
    // The book full (10,000 kept) and the log past its first rewrite, as in a long `listen`.
    await drive(listener, recorder, 25_000);
    const perEvent: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const before = process.cpuUsage();
      await drive(listener, recorder, EVENTS);
      const used = process.cpuUsage(before);
      perEvent.push((used.user + used.system) / EVENTS);
    }
    await recorder.close();
    return perEvent;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const logged: number[] = [];
const memory: number[] = [];
// Interleaved, twice each, so a noisy neighbour weighs on both alike.
for (let pass = 0; pass < 2; pass++) {
  logged.push(...(await measure(true)));
  memory.push(...(await measure(false)));
}
const us = (values: number[]) => `${num(median(values))} µs`;
console.log(`node ${process.version}; ${num(EVENTS)} events per round, ${ROUNDS} rounds × 2 passes, ${IN_FLIGHT} in flight, after 25,000 events that fill the book (10,000 kept); medians.\n`);
console.log(table(['ListenRecorder (the inspector of `listen`)', 'CPU per event', 'fastest round'], [
  ['with its log on disk (as `listen` runs it)', us(logged), us([Math.min(...logged)])],
  ['memory only (`log: false`)', us(memory), us([Math.min(...memory)])],
]));
console.log(`\nThe log's share: ${num(median(logged) - median(memory))} µs per event (its line, made and written once per exchange, and the rewrite that bounds the file).`);
