// One emitter process of the BullMQ end-to-end tests (issue 13), sharing a queue with the others:
//   node --import tsx emitter-bullmq.child.ts <redis url> <queue name> [<callback url> <count>]
// Prints "ready" once started; with a URL, sends <count> deliveries and prints "queued"; prints
// "attempt <id> <status>" for every attempt this process makes; on SIGTERM stops and prints "stopped".
import { bullmqQueue, createEmitter } from '../../src/index.js';

const [url, name, callback, count] = process.argv.slice(2);
const emitter = createEmitter({
  // Short locks, so a killed worker's attempt is taken over within a couple of seconds.
  queue: bullmqQueue({ url: url!, name: name!, lockDurationMs: 1_000, stalledIntervalMs: 500 }),
  concurrency: Number(process.env.CONCURRENCY ?? 4),
  allowPrivateNetworks: true,
  retrySchedule: new Array(5).fill(50),
  logger: { info: (m) => console.error(m), warn: (m) => console.error(m), error: (m) => console.error(m) },
});
emitter.on('attempt', (delivery, attempt) => void process.stdout.write(`attempt ${delivery.id} ${attempt.status ?? attempt.error}\n`));
await emitter.start();
process.stdout.write('ready\n');

if (callback) {
  const payload = (id: number) => ({
    id, status: 'done', prompt: `clip ${id}`, video_url: `https://app.example.com/videos/${id}`, error: null, error_code: null,
    credits_used: 18, duration: 10, model: 'standard', created_at: '2026-11-21T23:57:12Z', completed_at: '2026-11-21T23:58:49Z',
  });
  await Promise.all(Array.from({ length: Number(count) }, (_, i) =>
    emitter.send({ url: callback, secret: 'whsec_bullmq_e2e', event: 'video.completed', payload: payload(i + 1) })));
  process.stdout.write('queued\n');
}

process.once('SIGTERM', () => {
  void emitter.stop().then(() => {
    process.stdout.write('stopped\n');
    process.exit(0);
  });
});
