import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { completedEvent, signedRequest } from '../helpers/webhooks.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

const SECRET = 'whsec_redis_test';

// A claim's lease is the longest a handler may run before another process may run the same event (the
// direct path does not renew it). The duplicates test runs no slow handler: a lease far longer than any run
// on a loaded machine. The kill test needs B's refusal to come while A's lease holds (a few seconds after
// A started, however busy the machine) and the lease to end soon after A is killed.
const LONG_LEASE_MS = 60_000;
const KILL_LEASE_MS = 5_000;

async function receiverProcess(url: string, { slow = false, leaseMs = LONG_LEASE_MS } = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./redis-receiver.child.ts', import.meta.url)), url], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, SLOW_HANDLER: slow ? '1' : '0', LEASE_MS: String(leaseMs) },
  });
  children.push(child);
  const lines: string[] = [];
  let buffered = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        if (line.startsWith('{')) resolve((JSON.parse(line) as { port: number }).port);
        else lines.push(line);
      }
    });
    child.once('exit', (code) => reject(new Error(`receiver exited ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}/`, lines };
}

function post(url: string, request: ReturnType<typeof signedRequest>) {
  return fetch(url, { method: 'POST', headers: request.headers, body: request.body });
}

describe.runIf(redis)('two receiver processes sharing RedisDeliveryStore (issue 13)', () => {
  it('runs each handler once for 500 concurrent duplicate deliveries split across both processes', async () => {
    const [a, b] = await Promise.all([receiverProcess(redis!.url), receiverProcess(redis!.url)]);
    const deliveries = Array.from({ length: 100 }, (_, i) => signedRequest(completedEvent({ id: 10_000 + i }), { secret: SECRET, deliveryId: `dlv_dup_${i}_${Date.now()}` }));
    const sends = deliveries.flatMap((delivery, i) => Array.from({ length: 5 }, (_, copy) => post((i + copy) % 2 === 0 ? a.url : b.url, delivery)));
    const statuses = (await Promise.all(sends)).map((res) => res.status);
    // A duplicate is 200 (done) or 503 (the same delivery still running elsewhere): never a second run.
    expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
    const handled = [...a.lines, ...b.lines].filter((line) => line.startsWith('handled '));
    expect(handled).toHaveLength(100);
    expect(new Set(handled).size).toBe(100);
  });

  it('lets the sender\'s retry run a handler once more after its process was killed mid-handler, never twice at once', { timeout: 60_000 }, async () => {
    const [a, b] = await Promise.all([receiverProcess(redis!.url, { slow: true, leaseMs: KILL_LEASE_MS }), receiverProcess(redis!.url, { leaseMs: KILL_LEASE_MS })]);
    const delivery = signedRequest(completedEvent({ id: 20_001 }), { secret: SECRET, deliveryId: `dlv_kill_${Date.now()}` });
    void post(a.url, delivery).catch(() => undefined);
    await expect.poll(() => a.lines.some((line) => line.startsWith('started ')), { timeout: KILL_LEASE_MS / 2, interval: 10 }).toBe(true);
    // While A holds the claim, B refuses to run it a second time.
    expect((await post(b.url, delivery)).status).toBe(503);
    a.child.kill('SIGKILL');
    // A's lease expires in Redis; the sender's retry then runs the handler on B, once.
    await expect.poll(async () => (await post(b.url, delivery)).status, { timeout: KILL_LEASE_MS * 4, interval: 100 }).toBe(200);
    expect(b.lines.filter((line) => line.startsWith('handled '))).toHaveLength(1);
  });
});
