// A receiver with a file inbox, for inbox-crash.test.ts:
//   hang <dir> <secret>   handlers never finish (so events stay pending or running); prints "listening <port>"
//   run <dir> <secret>    handlers append the event's id to <dir>/handled.log; prints "listening <port>"
// An optional fourth argument is the port to listen on (0: a free one).
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { createReceiver, FileDeliveryStore } from '../../src/index.js';

const [mode, dir, secret = 'whsec_crash', port = '0'] = process.argv.slice(2);
const receiver = createReceiver({
  secret,
  store: new FileDeliveryStore({ file: join(dir!, 'deliveries.json') }),
  inbox: { file: join(dir!, 'inbox.json'), concurrency: 2 },
});
receiver.onAny((event, { attempt }) => {
  if (mode === 'hang') return new Promise(() => undefined);
  appendFileSync(join(dir!, 'handled.log'), `${event.id} ${attempt}\n`);
});
const server = createServer(receiver.express()).listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
