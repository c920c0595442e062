// One receiver process of the two-process Redis test: `node --import tsx redis-receiver.child.ts <redis url>`.
// Prints {"port"} once listening, then `started <delivery id>` and `handled <delivery id>` per handler run.
// SLOW_HANDLER=1 makes its handler wait 60 s, so the test can kill the process mid-handler; LEASE_MS is the claim's lease.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReceiver, RedisDeliveryStore } from '../../src/index.js';

const store = new RedisDeliveryStore({ url: process.argv[2]!, prefix: 'two-process:' });
const receiver = createReceiver({ secret: 'whsec_redis_test', store, leaseMs: Number(process.env.LEASE_MS) });
receiver.onAny(async (_event, { deliveryId }) => {
  process.stdout.write(`started ${deliveryId}\n`);
  if (process.env.SLOW_HANDLER === '1') await new Promise((resolve) => setTimeout(resolve, 60_000));
  process.stdout.write(`handled ${deliveryId}\n`);
});
const handle = receiver.express();
const server = createServer((req, res) => handle(req, res, () => undefined));
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
process.on('SIGTERM', () => void server.close(() => void receiver.close().then(() => process.exit(0))));
