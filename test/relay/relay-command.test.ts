import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createRelayServer } from 'cliphook';
import { relay, type RelayCommandOptions } from '../../src/cli/commands/relay.js';
import { isLoopbackHost } from '../../src/http/loopback.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { testdir } from './fixtures.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());

const silent = { out() {}, logger: { info() {}, warn() {} }, signal: AbortSignal.abort() };
const run = (options: Partial<RelayCommandOptions>) => relay({ port: '0', host: '127.0.0.1', data: '/nonexistent/relay.json', ...options }, silent);

describe('cliphook relay: exposure guard and flags', () => {
  it('refuses a non-loopback --host without --admin-token unless --open, in one line naming both flags (exit 2)', async () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'relay.example.com']) {
      const refused = run({ host });
      await expect(refused).rejects.toMatchObject({ exitCode: 2 });
      const { message } = (await refused.catch((error: Error) => error)) as Error;
      expect(message).toMatch(/--admin-token/);
      expect(message).toMatch(/--open/);
      expect(message).not.toContain('\n');
    }
    // With --open (or a token) the guard lets it through: here the next check, of --public-url, stops it before binding.
    await expect(run({ host: '0.0.0.0', open: true, publicUrl: 'ftp://x' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^Expected --public-url /) });
    await expect(run({ host: '0.0.0.0', adminToken: 'adm', publicUrl: 'ftp://x' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/--public-url/) });
  });

  it('names the flag, not the library option, in a bad value (exit 2)', async () => {
    await expect(run({ publicUrl: 'not a url' })).rejects.toMatchObject({ exitCode: 2, message: 'Expected --public-url to be an absolute http/https URL, got "not a url".' });
    await expect(run({ maxChannels: '0' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^Expected --max-channels to be a positive integer/) });
    await expect(run({ maxChannels: 'many' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--max-channels must be a whole number/) });
    await expect(run({ maxTotalBufferedBytes: '1.5' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--max-total-buffered-bytes /) });
  });
});

describe('cliphook relay --redis (issue 13)', () => {
  it('takes --redis or --data, not both, and a redis:// URL (exit 2)', async () => {
    await expect(run({ redis: 'redis://127.0.0.1:1', data: '.cliphook/relay.json' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--redis and --data are exclusive/) });
    await expect(run({ data: undefined, redis: 'http://127.0.0.1:6379' })).rejects.toMatchObject({ exitCode: 2, message: 'Expected --redis to be a redis:// or rediss:// URL, got "http://127.0.0.1:6379".' });
  });

  it('exits 1 at once, naming the Redis without its password, when nothing answers there', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const refused = run({ data: undefined, redis: `redis://user:hunter2@127.0.0.1:${port}` });
    await expect(refused).rejects.toMatchObject({ exitCode: 1, message: expect.stringMatching(new RegExp(`^cannot reach Redis at redis://127\\.0\\.0\\.1:${port} \\(--redis\\): .*ECONNREFUSED`)) });
    expect(((await refused.catch((error: Error) => error)) as Error).message).not.toContain('hunter2');
  });

  it.runIf(redis)('runs on the Redis of CLIPHOOK_REDIS_URL (a real process) and stops on SIGTERM', async () => {
    const { dir, cleanup } = await testdir();
    const bin = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));
    const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href; // the cwd is a temp folder
    const child = spawn(process.execPath, ['--import', tsx, bin, 'relay', '--port', '0'], { cwd: dir, env: { ...process.env, CLIPHOOK_REDIS_URL: redis!.url } });
    let out = '';
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const listening = /relay listening on (http:\S+) \(data: (redis:\S+);/.exec(out);
          if (listening) resolve(listening[1]!);
        });
        child.once('exit', (code) => reject(new Error(`relay exited with ${code}: ${out}`)));
      });
      expect(out).toContain(`(data: ${redis!.url};`);
      expect((await fetch(`${url}/channels`, { method: 'POST' })).status).toBe(201);
      expect(await (await fetch(`${url}/healthz`)).json()).toMatchObject({ status: 'ok', channels: 1, persistence: { ok: true } });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out.trim().split('\n').at(-1)).toBe('relay stopped');
    } finally {
      child.kill('SIGKILL');
      await cleanup();
    }
  }, 30_000);
});

describe('RelayServer.listen exposure guard', () => {
  it('rejects a non-loopback host without adminToken unless open: true, before binding anything', async () => {
    const relay = createRelayServer({ file: false });
    await expect(relay.listen(0, '0.0.0.0')).rejects.toThrow(/`adminToken`.*`open: true`/);
    expect(relay.url).toBeNull();
    expect(() => createRelayServer({ file: false, open: 'yes' as never })).toThrow(/`open`/);
    expect(() => createRelayServer({ file: false, maxChannels: 0 })).toThrow(/`maxChannels`/);
    expect(() => createRelayServer({ file: false, maxTotalBufferedBytes: -1 })).toThrow(/`maxTotalBufferedBytes`/);
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1', 'app.localhost']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '', '10.0.0.1', '128.0.0.1', 'example.com', '::ffff:10.0.0.1']) expect(isLoopbackHost(host), host).toBe(false);
  });
});
