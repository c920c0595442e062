// A Cloudflare Worker (module syntax) that receives the service's webhooks with `cliphook/web`, the entry
// that imports no Node module. The same `createReceiver(...).fetch(request)` runs in Deno and Bun.
// Deploy: `wrangler secret put SIGNING_SECRET`, then route POST /webhooks to this Worker.
import { createReceiver, type WebhookReceiver } from 'cliphook/web';

export interface Env {
  SIGNING_SECRET: string;
}

let receiver: WebhookReceiver | undefined;
/** What the handlers saw, for this example's test; a real Worker would store or enqueue the work. */
export const seen: string[] = [];

export default {
  fetch(request: Request, env: Env): Promise<Response> | Response {
    if (request.method !== 'POST' || new URL(request.url).pathname !== '/webhooks') return new Response('Not found\n', { status: 404 });
    // Created once per isolate: its memory store dedupes the requests that isolate serves.
    receiver ??= createReceiver({ secret: env.SIGNING_SECRET })
      .on('video.completed', (event) => void seen.push(`clip ${event.id} ready: ${event.video_url}`))
      .on('video.failed', (event) => void seen.push(`clip ${event.id} failed: ${event.error_code}`));
    return receiver.fetch(request);
  },
};
