// A receiver whose handler ends the process on video.failed, for inbox-poison.test.ts:
//   node --import tsx inbox-poison.child.ts <file|redis> <inbox file | redis url> <prefix> <exit|exit-later> [wait]
// Prints "listening <port>", then "handled <event id> <attempt>" per video.completed run. video.failed calls
// process.exit(3) at once (`exit`) or 100 ms into the run (`exit-later`). With `wait`, handlers are registered
// only when stdin says "go". A line "stats" on stdin is answered "stats <json of inbox.stats()>".
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { createReceiver, MemoryDeliveryStore, type WebhookEvent, type WebhookContext } from '../../src/index.js';

const [backend, where, prefix, mode, wait] = process.argv.slice(2);
const receiver = createReceiver({
  secret: 'whsec_poison',
  store: new MemoryDeliveryStore(),
  // A short lease, so a Redis claim of a process that ended is taken over within the test.
  leaseMs: 300,
  inbox: { ...(backend === 'redis' ? { redis: where!, prefix, pollMs: 50 } : { file: where! }), concurrency: 1, retries: 1, minTimeout: 0 },
});
receiver.onError(() => undefined);
const handler = (event: WebhookEvent, { attempt }: WebhookContext) => {
  if (event.event === 'video.failed') {
    if (mode === 'exit') process.exit(3);
    return new Promise<void>(() => setTimeout(() => process.exit(3), 100));
  }
  process.stdout.write(`handled ${event.id} ${attempt}\n`);
};
if (wait !== 'wait') receiver.onAny(handler);
const server = createServer(receiver.express()).listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`));
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'go') receiver.onAny(handler);
  if (line === 'stats') void receiver.inbox!.stats().then((stats) => process.stdout.write(`stats ${JSON.stringify(stats)}\n`));
});
