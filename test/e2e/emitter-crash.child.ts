// A process that owns a file outbox, for the crash test in emitter-crash.test.ts:
//   send <outbox> <url> <count>   sends <count> deliveries, prints "queued" once all are on disk
//   resume <outbox>               resumes whatever the outbox holds
// Either way it prints "done <delivered> <failed>" and exits once nothing is pending.
import { createEmitter, FileOutbox } from '../../src/index.js';

const [mode, file, url, count] = process.argv.slice(2);
const emitter = createEmitter({
  store: new FileOutbox({ file: file! }),
  allowPrivateNetworks: true,
  // The spec's schedule takes 2 h 42 min; the test needs its shape (many retries), not its length.
  retrySchedule: new Array(15).fill(20),
  retainFinished: 100_000,
  logger: { info: () => undefined, warn: (m) => console.error(m), error: (m) => console.error(m) },
});
await emitter.start();

if (mode === 'send') {
  const payload = (id: number) => ({
    id, status: 'done', prompt: `clip ${id}`, video_url: `https://app.example.com/videos/${id}`, error: null, error_code: null,
    credits_used: 18, duration: 10, model: 'standard', created_at: '2026-11-21T23:57:12Z', completed_at: '2026-11-21T23:58:49Z',
  });
  await Promise.all(Array.from({ length: Number(count) }, (_, i) =>
    emitter.send({ url: url!, secret: 'whsec_crash', event: 'video.completed', payload: payload(i + 1) })));
  process.stdout.write('queued\n');
}

await new Promise<void>((resolve) => {
  const check = (): void => {
    const { pending, inFlight } = emitter.stats;
    if (pending === 0 && inFlight === 0) resolve();
  };
  emitter.on('attempt', () => void setImmediate(check));
  setImmediate(check);
});

await emitter.stop();
const all = emitter.list({ limit: 1_000_000 });
process.stdout.write(`done ${all.filter((d) => d.state === 'delivered').length} ${all.filter((d) => d.state === 'failed').length}\n`);
