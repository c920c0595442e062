import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface PrivateRedis {
  url: string;
  port: number;
  /** Stops the server (it writes its append-only file first when `persist` is on) and keeps its folder. */
  kill(): Promise<void>;
  /** Starts it again on the same port and folder; resolves once it answers PING. */
  start(): Promise<void>;
  /** `kill()` then `start()`: what a restart of Redis under a running client looks like. */
  restart(): Promise<void>;
  /** Stops the server for good and removes its folder. */
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /**
   * Keeps data across `restart()` in an append-only file fsynced on every write, as a production Redis
   * that must not lose queued jobs would be configured. @default false
   */
  persist?: boolean;
}

/** Whether this machine has redis-server; in CI (`CI=true`) its absence is an error, never a skip. */
export function redisAvailable(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    if (process.env.CI === 'true') throw new Error('redis-server is missing: .ci/run installs it (apt-get install redis-server).');
    console.log('Redis tests skipped: install redis-server (apt-get install redis-server) to run them.');
    return false;
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitForPing(url: string): Promise<void> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // Refused until the server listens: the loop below retries, so the event carries nothing to report.
  probe.on('error', () => undefined);
  try {
    for (let tries = 0; ; tries++) {
      try {
        if (probe.status !== 'ready') await probe.connect();
        await probe.ping();
        return;
      } catch (error) {
        if (tries > 200) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  } finally {
    probe.disconnect();
  }
}

/** A private redis-server on a free loopback port with a folder of its own, never the default 6379. */
export async function startRedis({ persist = false }: StartRedisOptions = {}): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--protected-mode', 'yes'];
  args.push(...(persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    if (child) return;
    const started = spawn('redis-server', args, { stdio: 'ignore' });
    child = started;
    exited = new Promise<void>((resolve) => started.once('exit', () => resolve()));
    await waitForPing(url);
  };
  const kill = async (): Promise<void> => {
    if (!child) return;
    child.kill('SIGTERM');
    await exited;
    child = null;
  };
  await start();
  return {
    url,
    port,
    kill,
    start,
    restart: async () => {
      await kill();
      await start();
    },
    stop: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
