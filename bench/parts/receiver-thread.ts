// A receiver for the emitter benchmarks (not a benchmark: `bench/run.ts` reads only the top folder).
import { Worker } from 'node:worker_threads';

/** A receiver answering 200 `{"received":true}` on 127.0.0.1, in its own thread, so it takes no CPU of the sender's. */
export async function startReceiver(): Promise<{ url: string; stop: () => Promise<number> }> {
  const worker = new Worker(
    `const { createServer } = require('node:http');
     const { parentPort } = require('node:worker_threads');
     const server = createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"received":true}'); }); });
     server.keepAliveTimeout = 60000;
     server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
    { eval: true },
  );
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  return { url: `http://127.0.0.1:${port}/webhooks`, stop: () => worker.terminate() };
}
