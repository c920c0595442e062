// A Fetch-API webhook route: the same code works as a Next.js route handler (app/api/webhooks/route.ts),
// in Hono (`app.post('/webhooks', (c) => POST(c.req.raw))`), Bun.serve, Deno.serve and Workers.
// Run locally: SIGNING_SECRET=whsec_… node --import tsx examples/fetch-receiver.ts
import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { MemoryDeliveryStore, createReceiver } from 'cliphook';

export const receiver = createReceiver({
  secret: process.env.SIGNING_SECRET ?? 'whsec_dev_only_change_me',
  // Serverless platforms have no durable local disk: use a shared store (Redis) there.
  store: new MemoryDeliveryStore(),
});

receiver.on('video.completed', (event) => console.log(`clip ${event.id} ready: ${event.video_url}`));
receiver.on('video.failed', (event) => console.log(`clip ${event.id} failed: ${event.error_code}`));

export const POST = (req: Request) => receiver.fetch(req);

/** Serves `POST` from plain Node, turning each request into a Fetch `Request`. */
export function serve(port = 3000, host = '127.0.0.1') {
  const server = createServer(async (req, res) => {
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
    const request = new Request(`http://${host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? null : (Readable.toWeb(req) as ReadableStream),
      duplex: 'half',
    } as RequestInit);
    const response = req.url === '/webhooks' && req.method === 'POST' ? await POST(request) : new Response('not found\n', { status: 404 });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  return new Promise<typeof server>((resolve) => server.listen(port, host, () => resolve(server)));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await serve(Number(process.env.PORT ?? 3000));
  const { port } = server.address() as { port: number };
  console.log(`fetch receiver listening on http://127.0.0.1:${port}/webhooks`);
}
