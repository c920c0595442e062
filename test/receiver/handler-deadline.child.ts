// A process for test/receiver/handler-deadline.test.ts: a receiver with a file inbox in argv[2] whose handler
// never settles and holds nothing open. It takes one webhook, then awaits close() (closeTimeout 200 ms) at the
// top level and prints what it saw: the process must live until close() returns, then exit 0 by itself.
import { join } from 'node:path';
import { createReceiver, createTestWebhook, MemoryDeliveryStore } from '../../src/index.js';

const secret = 'whsec_close_child';
const receiver = createReceiver({ secret, store: new MemoryDeliveryStore(), inbox: { file: join(process.argv[2]!, 'inbox.json'), closeTimeout: 200 } });
let started!: () => void;
const running = new Promise<void>((resolve) => (started = resolve));
receiver.onAny((_event, { signal }) => {
  signal.addEventListener('abort', () => process.stdout.write(`aborted ${(signal.reason as { limit: string }).limit}\n`));
  started();
  return new Promise<void>(() => undefined);
});
const hook = createTestWebhook('video.completed', { secret });
const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
process.stdout.write(`answered ${reply.status}\n`);
await running;
await receiver.close();
process.stdout.write('closed\n');
