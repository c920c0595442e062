// RedisConnection (issue 13): fails fast while Redis is away, says so once each way, and recovers by itself.
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { realScheduler } from '../../../src/relay/heartbeat.js';
import { RedisConnection } from '../../../src/relay/redis/connection.js';
import { redisAvailable, startRedis } from '../../helpers/redis.js';

const available = redisAvailable();
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function logger() {
  const lines: string[] = [];
  return { lines, info: (line: string) => void lines.push(`info ${line}`), warn: (line: string) => void lines.push(`warn ${line}`) };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('RedisConnection', () => {
  it('shows where it connects without the password', () => {
    const connection = new RedisConnection({ client: null, url: 'redis://relay:s3cret@redis.internal:6380/2', logger: logger(), scheduler: realScheduler, clock: Date.now });
    expect(connection.where).toBe('redis://redis.internal:6380/2');
  });

  it('fails to open, saying where and why, when nothing answers', async () => {
    const port = await closedPort();
    const connection = new RedisConnection({ client: null, url: `redis://127.0.0.1:${port}`, logger: logger(), scheduler: realScheduler, clock: Date.now, connectTimeoutMs: 300 });
    await expect(connection.open()).rejects.toMatchObject({ code: 'relay_unavailable', message: expect.stringMatching(new RegExp(`^cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: `)) });
  });
});

describe.runIf(available)('RedisConnection against a Redis that restarts', () => {
  it('refuses at once while Redis is away, reports the outage and the recovery once each, and reloads its scripts', async () => {
    const redis = await startRedis({ persist: true });
    cleanups.push(() => redis.stop());
    const log = logger();
    let now = 1_000;
    const connection = new RedisConnection({ client: null, url: redis.url, logger: log, scheduler: realScheduler, clock: () => now });
    cleanups.push(() => connection.close());
    let recovered = 0;
    connection.onRecovered(() => recovered++);
    await connection.open();
    const stats = () => connection.eval('STATS', ['conn:', '']);
    expect(await stats()).toEqual([0, 0]);
    expect(connection.health).toEqual({ ok: true });

    await redis.kill();
    await expect.poll(() => connection.health.ok).toBe(false);
    expect(connection.health).toMatchObject({ ok: false, since: 1_000, detail: expect.stringMatching(/^cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: /) });
    await expect(stats()).rejects.toMatchObject({ code: 'relay_unavailable', message: expect.not.stringMatching(/127\.0\.0\.1/) });
    await expect(connection.command((client) => client.exists('probe'))).rejects.toMatchObject({ code: 'relay_unavailable' });

    now = 4_000;
    await redis.start();
    await expect.poll(() => connection.health.ok, { timeout: 15_000 }).toBe(true);
    expect(recovered).toBe(1);
    // A restarted Redis has forgotten the scripts: they are loaded again on the NOSCRIPT.
    expect(await stats()).toEqual([0, 0]);
    expect(log.lines.filter((line) => line.startsWith('warn lost Redis'))).toHaveLength(1);
    expect(log.lines.filter((line) => line.startsWith('info Redis at'))).toEqual([expect.stringMatching(/is back after 3 s/)]);
  });

  it('leaves a client it was given open, and closes the one it made for pub/sub', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    const client = new Redis(redis.url);
    cleanups.push(() => client.quit());
    const connection = new RedisConnection({ client, url: null, logger: logger(), scheduler: realScheduler, clock: Date.now });
    await connection.open();
    expect(connection.where).toBe(`redis://127.0.0.1:${redis.port}`);
    const { subscriber } = connection;
    await connection.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    await expect.poll(() => subscriber.status).toBe('end');
  });
});
