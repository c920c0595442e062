// An Express app that receives the service's clip webhooks.
// Run: SIGNING_SECRET=whsec_… PORT=3000 node --import tsx examples/express-receiver.ts   (npm start runs cliphook dev, which has a receiver of its own)
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { createReceiver, sign, type DeliveryStore } from 'cliphook';

export interface ExampleOptions {
  secret: string;
  /** Where processed deliveries are remembered; the default is `.cliphook/deliveries.json`. */
  store?: DeliveryStore;
  log?: (line: string) => void;
}

export function createApp({ secret, store, log = console.log }: ExampleOptions) {
  const receiver = createReceiver({ secret, ...(store ? { store } : {}) });

  receiver.on('video.completed', async (event, { deliveryId }) => {
    log(`clip ${event.id} is ready (${event.duration} s, ${event.credits_used} credits): ${event.video_url} [${deliveryId}]`);
  });
  receiver.on('video.failed', async (event) => {
    log(`clip ${event.id} failed with ${event.error_code}: ${event.error ?? ''}`);
  });
  receiver.onError((error) => log(`refused a webhook: ${error.code}: ${error.message}`));

  const app = express();
  // Mount the receiver before any JSON body parser: the signature covers the raw bytes.
  app.post('/webhooks', receiver.express());
  app.use(express.json());
  app.get('/', (_req, res) => void res.send('POST signed webhooks to /webhooks\n'));
  return { app, receiver };
}

export async function start(options: ExampleOptions & { port?: number; host?: string }) {
  const { app, receiver } = createApp(options);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(options.port ?? 3000, options.host ?? '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}/webhooks`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await receiver.close();
    },
  };
}

/** Writes a freshly signed sample event and returns a curl command that sends it. */
export function sampleCurl(url: string, secret: string, file = '.cliphook/sample-event.json'): string {
  const body = JSON.stringify({
    event: 'video.completed', id: Math.floor(Math.random() * 1e6) + 1, status: 'done',
    prompt: 'A red fox trotting through fresh snow', video_url: 'https://app.example.com/videos/1',
    error: null, error_code: null, credits_used: 9, duration: 5, model: 'standard',
    created_at: new Date(Date.now() - 90_000).toISOString(), completed_at: new Date().toISOString(),
    delivered_at: new Date().toISOString(),
  });
  mkdirSync('.cliphook', { recursive: true });
  writeFileSync(file, body);
  return [
    `curl -i -X POST ${url}`,
    `  -H 'Content-Type: application/json'`,
    `  -H 'X-Service-Event: video.completed'`,
    `  -H 'X-Service-Delivery: dlv_sample_${Date.now()}'`,
    `  -H 'X-Service-Signature: ${sign(body, secret)}'`,
    `  --data-binary @${file}`,
  ].join(' \\\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.SIGNING_SECRET ?? 'whsec_dev_only_change_me';
  const { url, close } = await start({ secret, port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
  // Stop cleanly on Ctrl-C or `docker stop`: pending marks are written and the store's lock is released,
  // so the next start (in a new container too) opens the file at once.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void close().then(() => process.exit(0), () => process.exit(1)));
  }
  console.log(`cliphook example receiver listening on ${url}`);
  if (!process.env.SIGNING_SECRET) console.log('(no SIGNING_SECRET set: using whsec_dev_only_change_me)');
  console.log('\nSend it a signed event (the signed delivered_at is valid for 5 minutes):\n');
  console.log(sampleCurl(url, secret));
  console.log(`\nor: npx cliphook trigger video.completed --url ${url} --secret ${secret}\n`);
}
