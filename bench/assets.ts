// Issue 12's benchmarks. (1) POST /v1/assets of a 5 MB JPEG: MB/s and peak RSS of the service against a bare
// Express route that streams the same upload to disk, each server in its own process on 127.0.0.1:0,
// uploads interleaved. (2) Image jobs to `done` per second with --speed fast on a frozen clock that the bench
// advances, with the CPU it costs to make the files (sharp).
//   node --import tsx bench/assets.ts [--quick]
import { randomFillSync } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { median, num, ratio, table } from './lib.js';
import { code } from './parts/code.js';

const QUICK = process.argv.includes('--quick');
const UPLOADS = QUICK ? 4 : 24;
const ROUNDS = QUICK ? 1 : 3;
const JOBS = QUICK ? 12 : 60;
const BOUNDARY = 'cliphookbenchboundary';

// ---- server side: `--serve service|bare` prints {"port","apiKey"} and answers `stats` on stdin ------------

async function serve(kind: 'service' | 'bare'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-assets-'));
  let handler: Parameters<typeof createServer>[1];
  let apiKey = '';
  let close = async () => {};
  if (kind === 'service') {
    const { createServiceApp } = await code<typeof import('../src/service/http/app.js')>('service/http/app.js');
    const app = await createServiceApp({ file: join(dir, 'service.json'), rateLimitPerMinute: 1e9, warn: () => undefined });
    apiKey = app.service.first().apiKey;
    handler = app;
    close = () => app.close();
  } else {
    const { default: express } = await import('express');
    const app = express();
    let n = 0;
    // The same bytes to disk as they arrive, and nothing else: the floor for an upload.
    app.post('/v1/assets', (req, res) => {
      const out = createWriteStream(join(dir, `upload-${n++}`));
      req.pipe(out).on('finish', () => void res.status(200).json({ ok: true }));
    });
    handler = app;
  }
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port, apiKey })}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'stats') process.stdout.write(`${JSON.stringify({ maxRssKiB: process.resourceUsage().maxRSS, rssKiB: process.memoryUsage().rss / 1024, cpu: process.cpuUsage() })}\n`);
  }
  server.closeAllConnections();
  server.close();
  await close();
  rmSync(dir, { recursive: true, force: true });
}

// ---- client side ----------------------------------------------------------------------------------

interface Child {
  process: ChildProcess;
  port: number;
  apiKey: string;
  stats(): Promise<{ maxRssKiB: number; rssKiB: number; cpu: NodeJS.CpuUsage }>;
}

async function start(kind: 'service' | 'bare'): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', kind], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = JSON.parse((await lines.next()).value as string) as { port: number; apiKey: string };
  return {
    process: child,
    ...first,
    stats: async () => {
      child.stdin!.write('stats\n');
      return JSON.parse((await lines.next()).value as string);
    },
  };
}

/**
 * A multipart body with one JPEG of about 5 MiB, built once: 2,560 × 2,560 pixels of noise (noise does not
 * compress), encoded by sharp. The service decodes what it takes (issue 20: a file whose pixels do not decode
 * is 400 bad_mime), so magic bytes and filler are no longer an upload it accepts.
 */
async function uploadBody(): Promise<{ body: Buffer; fileBytes: number }> {
  const { default: sharp } = await import('sharp');
  const side = 2_560;
  const jpeg = await sharp(randomFillSync(Buffer.alloc(side * side * 3)), { raw: { width: side, height: side, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="subject_consent"\r\n\r\nself\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="photo.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`),
    jpeg,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return { body, fileBytes: jpeg.length };
}

async function upload(child: Child, { body, fileBytes }: { body: Buffer; fileBytes: number }, count: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const res = await fetch(`http://127.0.0.1:${child.port}/v1/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${child.apiKey}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: body as unknown as BodyInit,
    });
    if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
  return (count * fileBytes) / 1024 / 1024 / ((performance.now() - started) / 1000);
}

async function uploads(): Promise<string> {
  const body = await uploadBody();
  const service = await start('service');
  const bare = await start('bare');
  const rates: Record<'service' | 'bare', number[]> = { service: [], bare: [] };
  try {
    // RSS at rest, before any upload: the service loads more code (sharp, zod) than a bare route.
    const rest = { service: (await service.stats()).rssKiB, bare: (await bare.stats()).rssKiB };
    await upload(service, body, 1);
    await upload(bare, body, 1);
    for (let round = 0; round < ROUNDS; round++) {
      rates.service.push(await upload(service, body, UPLOADS / ROUNDS));
      rates.bare.push(await upload(bare, body, UPLOADS / ROUNDS));
    }
    const [s, b] = [await service.stats(), await bare.stats()];
    const serviceRate = median(rates.service);
    const bareRate = median(rates.bare);
    return [
      `POST /v1/assets, a 5 MiB JPEG, ${UPLOADS} uploads in ${ROUNDS} interleaved rounds per server, one at a time`,
      '',
      table(['server', 'MB/s (median round)', 'vs bare', 'RSS at rest → peak'], [
        ['cliphook serve: busboy to a temporary file, SHA-256 and magic bytes while reading, dedupe, journal', num(serviceRate), ratio(serviceRate, bareRate), `${num(rest.service / 1024)} → ${num(s.maxRssKiB / 1024)} MiB`],
        ['bare Express route: the request piped to a file', num(bareRate), '1.00×', `${num(rest.bare / 1024)} → ${num(b.maxRssKiB / 1024)} MiB`],
      ]),
      '',
      `RSS grew by ${num((s.maxRssKiB - rest.service) / 1024)} MiB in the service and ${num((b.maxRssKiB - rest.bare) / 1024)} MiB in the bare route while uploading ${num(body.fileBytes / 1024 / 1024)} MiB files: stream buffers, not files held whole (issue 12 sets no target here).`,
    ].join('\n');
  } finally {
    service.process.stdin!.end();
    bare.process.stdin!.end();
  }
}

async function imageJobs(): Promise<string> {
  const { Service } = await code<typeof import('../src/service/service.js')>('service/service.js');
  const { SimulatedClock } = await code<typeof import('../src/service/core/clock.js')>('service/core/clock.js');
  const { ImageRequest } = await code<typeof import('../src/service/contract/images.js')>('service/contract/images.js');
  const clock = new SimulatedClock({ frozen: true });
  const service = await Service.open({ file: false, clock, rateLimitPerMinute: 1e9, balance: 1e9, warn: () => undefined });
  try {
    // The per-account limits (3 at once, 30 per 10 minutes) are the spec's: spread the jobs over accounts.
    const callers = Array.from({ length: Math.ceil(JOBS / 3) }, () => {
      const { account, key } = service.accounts.create({ balance: 1000 });
      return { account, key };
    });
    const cpu = process.cpuUsage();
    const started = performance.now();
    let made = 0;
    for (let i = 0; i < JOBS; i += callers.length * 3) {
      const batch = [];
      for (const caller of callers) for (let j = 0; j < 3 && i + batch.length < JOBS; j++) batch.push(service.store.unit(() => service.images.create(caller, ImageRequest.parse({ description: `a lighthouse at dawn ${i + batch.length}` }))));
      const results = await Promise.all(batch);
      await clock.advance(10_000);
      made += results.length;
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const done = [...service.store.table('image_job').values()].filter((job) => job.status === 'done').length;
    return [
      `Image jobs, standard quality, 1 image each (about 2.4 MP JPEG + a WebP preview), --speed fast, the clock advanced by the bench`,
      '',
      table(['measure', 'value'], [
        ['jobs to done', `${done} of ${made}`],
        ['jobs/s', num(made / seconds)],
        ['CPU per job (sharp drawing, encoding and the preview; user + system)', `${num((used.user + used.system) / 1000 / made)} ms`],
      ]),
    ].join('\n');
  } finally {
    await service.close();
  }
}

const serveIndex = process.argv.indexOf('--serve');
if (serveIndex >= 0) {
  await serve(process.argv[serveIndex + 1] as 'service' | 'bare');
} else {
  console.log(`${await uploads()}\n\n${await imageJobs()}\n\nnode ${process.version}`);
}
