import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runBin, startServe, tempDir } from '../cli/helpers.js';
import { startFailoverProxy } from '../helpers/proxy.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';

// Two `cliphook serve --redis` processes behind one port (a round-robin TCP balancer), as issue 13 asks:
// they split the load, a retried POST that lands on the other process is replayed rather than charged
// again, and every clip's webhook goes out once through the shared BullMQ queue.
const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const API_KEY = 'sk_two_serve_processes_one_redis';
// Six processes start here, each compiling the CLI through tsx (two servers, four CLI runs), and the clips end
// in real time: seconds each on a 2-core machine that runs the other test files meanwhile. The bound is for
// a hung process, not a measure of speed; nothing asserted depends on how long any of it takes.
const PROCESSES_TIMEOUT = 180_000;

async function serve(data: string) {
  const started = await startServe(['--data', data, '--api-key', API_KEY, '--balance', '1000'], { CLIPHOOK_REDIS_URL: redis!.url });
  cleanups.push(started.stop);
  return started.ready as { origin: string };
}

/** One request on a connection of its own, so the balancer picks a process for each. */
function call(origin: string, method: string, path: string, { body, key }: { body?: unknown; key?: string } = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(`${origin}${path}`, {
      method,
      agent: false,
      headers: { authorization: `Bearer ${API_KEY}`, ...(text ? { 'content-type': 'application/json' } : {}), ...(key ? { 'idempotency-key': key } : {}) },
    });
    req.on('response', (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (data += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(data) }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

describe.runIf(redis)('two serve processes on one Redis behind one port (issue 13)', () => {
  it('split the requests, replay a retry on the other process without a second charge, and send each webhook once', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const received: string[] = [];
    const receiver: Server = createServer((req, res) => {
      received.push(String(req.headers['x-service-delivery']));
      req.resume();
      req.on('end', () => res.writeHead(200).end('ok'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => receiver.close(resolve)));
    const callback = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;

    const [a, b] = await Promise.all([serve(join(dir, 'a', 'service.json')), serve(join(dir, 'b', 'service.json'))]);
    const balancer = await startFailoverProxy([new URL(a.origin), new URL(b.origin)], { roundRobin: true });
    cleanups.push(() => balancer.close());

    const clips = 12;
    const firsts = [];
    for (let i = 0; i < clips; i++) firsts.push(await call(balancer.url, 'POST', '/v1/videos', { key: `clip-${i}`, body: { prompt: `a fox, take ${i}`, callback_url: callback } }));
    // Each request again with its key, as a client that timed out would: the balancer sends it to the other process.
    const retries = [];
    for (let i = 0; i < clips; i++) retries.push(await call(balancer.url, 'POST', '/v1/videos', { key: `clip-${i}`, body: { prompt: `a fox, take ${i}`, callback_url: callback } }));
    expect(firsts.map((r) => r.status)).toEqual(Array(clips).fill(202));
    expect(retries.map((r) => r.status)).toEqual(Array(clips).fill(202));
    expect(retries.every((r) => r.headers['idempotent-replayed'] === 'true')).toBe(true);
    expect(retries.map((r) => r.body)).toEqual(firsts.map((r) => r.body));

    // Both processes made clips, and together they charged each clip once.
    const [accountA, accountB] = await Promise.all([call(a.origin, 'GET', '/v1/account'), call(b.origin, 'GET', '/v1/account')]);
    const charged = firsts.reduce((sum, r) => sum + (r.body.credits_used as number), 0);
    expect(1000 - accountA.body.balance + (1000 - accountB.body.balance)).toBe(charged);
    expect(accountA.body.balance).toBeLessThan(1000);
    expect(accountB.body.balance).toBeLessThan(1000);

    // Every clip ends (fast speed) and its webhook reaches the receiver once, whichever worker sent it.
    await expect.poll(() => received.length, { timeout: PROCESSES_TIMEOUT, interval: 200 }).toBe(clips);
    expect(new Set(received).size).toBe(clips);

    // `cliphook deliveries --redis` reads the same queue: every delivery, and a redelivery by id.
    const listed = await runBin(['deliveries', 'list', '--json', '--limit', '100'], { CLIPHOOK_REDIS_URL: redis!.url });
    expect(listed.code).toBe(0);
    const deliveries = JSON.parse(listed.stdout) as Array<{ id: string; state: string; url: string }>;
    expect(deliveries.map((d) => d.id).sort()).toEqual([...received].sort());
    expect(deliveries.every((d) => d.state === 'delivered' && d.url === callback)).toBe(true);
    const shown = await runBin(['deliveries', 'show', received[0]!, '--redis', redis!.url]);
    expect(shown.stdout).toContain(received[0]!);
    expect(shown.stdout).toMatch(/\[200\]/);
    const again = await runBin(['deliveries', 'redeliver', received[0]!, '--redis', redis!.url]);
    expect(again).toMatchObject({ code: 0, stdout: expect.stringMatching(/\[200\]/) });
    expect(received.filter((id) => id === received[0])).toHaveLength(2);
    expect(await runBin(['deliveries', 'show', 'dlv_nope', '--redis', redis!.url])).toMatchObject({ code: 1, stderr: expect.stringMatching(/no delivery dlv_nope in redis:\/\/127\.0\.0\.1/) });
  }, PROCESSES_TIMEOUT);
});
