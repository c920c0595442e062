// One receiver process sharing a Redis inbox, for inbox-redis.test.ts:
//   node --import tsx inbox-redis.child.ts <redis url> <prefix> <run|hang>
// Prints "listening <port>", then "handled <event id> <attempt> <source>" per handler run; with `hang`
// the handler never finishes, so the process dies holding its claims. A line "idle" on stdin is answered
// "idle" once its inbox has nothing in flight (inbox.idle()), after every "handled" line printed before.
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { createReceiver, RedisDeliveryStore } from '../../src/index.js';

const [url, prefix, mode] = process.argv.slice(2);
const store = new RedisDeliveryStore({ url: url!, prefix: `${prefix}d:` });
// A short lease, so a claim of a killed process is taken over within the test.
const receiver = createReceiver({ secret: 'whsec_redis_inbox', store, leaseMs: 1_000, inbox: { redis: url!, prefix: `${prefix}i:`, pollMs: 100, concurrency: 2 } });
receiver.onAny(async (event, { attempt, source }) => {
  if (mode === 'hang') return new Promise(() => undefined);
  process.stdout.write(`handled ${event.id} ${attempt} ${source}\n`);
});
const server = createServer(receiver.express()).listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => void server.close(() => void receiver.close().then(() => process.exit(0))));
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'idle') void receiver.inbox!.idle().then(() => process.stdout.write('idle\n'));
});
