// Prints which Redis libraries this process has loaded after an outbox emitter ran, after an emitter on Redis
// was created (not started), and after a plain import of ioredis (the check's own control). Both are
// CommonJS packages, so a load shows in the CommonJS cache. `node --import tsx lazy-load.child.ts`
import { createRequire } from 'node:module';
import { bullmqQueue, createEmitter, MemoryOutbox } from '../../../src/index.js';

const cache = createRequire(import.meta.url).cache;
const loaded = () => ({
  bullmq: Object.keys(cache).some((file) => file.includes('/node_modules/bullmq/')),
  ioredis: Object.keys(cache).some((file) => file.includes('/node_modules/ioredis/')),
});

const emitter = createEmitter({ store: new MemoryOutbox(), fetch: async () => new Response('ok') });
await emitter.start();
const payload = {
  id: 1, status: 'done', prompt: 'p', video_url: 'https://app.example.com/videos/1', error: null, error_code: null,
  credits_used: 18, duration: 10, model: 'standard', created_at: '2026-11-21T23:57:12Z', completed_at: '2026-11-21T23:58:49Z',
};
const sent = await emitter.send({ url: 'https://example.com/hook', secret: 'whsec_lazy', event: 'video.completed', payload });
await new Promise((resolve) => emitter.on('delivered', resolve));
await emitter.stop();
const afterOutbox = { ...loaded(), state: emitter.get(sent.id)?.state };
const onRedis = createEmitter({ queue: bullmqQueue({ url: 'redis://127.0.0.1:1' }) });
const afterCreate = loaded();
await onRedis.stop();
await import('ioredis');
process.stdout.write(`${JSON.stringify({ afterOutbox, afterCreate, control: loaded() })}\n`);
