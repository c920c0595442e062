// A handler that ends the process (process.exit at once, or 100 ms into its run) is dead-lettered after
// `retries + 1` runs, on a file and on a Redis inbox: every start dies on it until then, and after it the
// other events run, each once. The receivers are child processes, started again after each exit.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createTestWebhook, type InboxStats } from '../../src/index.js';
import { FileInboxBackend } from '../../src/receiver/inbox/file-backend.js';
import { RedisInboxBackend } from '../../src/receiver/inbox/redis-backend.js';
import type { InboxBackend } from '../../src/receiver/inbox/record.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { tempDir } from '../helpers/webhooks.js';

const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const child = fileURLToPath(new URL('./inbox-poison.child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
let prefixes = 0;

interface Child {
  proc: ChildProcessWithoutNullStreams;
  url: string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  /** The child's `receiver.inbox.stats()`. */
  stats(): Promise<InboxStats>;
}

/** `[event id, attempt]` of every video.completed run, across every child. */
let handled: Array<[number, number]> = [];

async function start(args: string[]): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
  cleanups.push(async () => void proc.kill('SIGKILL'));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const answers: Array<(stats: InboxStats) => void> = [];
  let output = '';
  const port = await new Promise<string>((resolve, reject) => {
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (output + chunk).split('\n');
      output = lines.pop()!;
      for (const line of lines) {
        const [word, a, b] = line.split(' ');
        if (word === 'listening') resolve(a!);
        if (word === 'handled') handled.push([Number(a), Number(b)]);
        if (word === 'stats') answers.shift()?.(JSON.parse(line.slice('stats '.length)) as InboxStats);
      }
    });
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => process.stderr.write(chunk));
    void exited.then((code) => reject(new Error(`child exited ${code} before listening`)));
  });
  proc.stdin.on('error', () => undefined); // the child may end while it is being asked
  const stats = () =>
    new Promise<InboxStats>((resolve, reject) => {
      if (proc.exitCode !== null) return reject(new Error('child exited'));
      answers.push(resolve);
      proc.stdin.write('stats\n');
      void exited.then(() => reject(new Error('child exited')));
    });
  return { proc, url: `http://127.0.0.1:${port}/webhooks`, exited, stats };
}

const post = async (url: string, hook: { headers: Record<string, string>; body: string }) => (await fetch(url, { method: 'POST', headers: hook.headers, body: hook.body })).status;

const backends = {
  file: async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    const open = async (): Promise<InboxBackend> => {
      const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 86_400_000, clock: Date.now });
      await backend.open();
      return backend;
    };
    return { args: ['file', file, '-'], open };
  },
  ...(redis
    ? {
        redis: async () => {
          const prefix = `poison${++prefixes}:`;
          const open = async (): Promise<InboxBackend> => new RedisInboxBackend({ redis: redis.url, prefix, keepDone: 100, keepDoneMs: 86_400_000 });
          return { args: ['redis', redis.url, prefix], open };
        },
      }
    : {}),
};

describe.each(Object.entries(backends))('a handler that ends the process, on a %s inbox', (_name, make) => {
  it.each(['exit', 'exit-later'])('(%s) is dead after retries + 1 runs; then the other events run, once each', async (mode) => {
    handled = [];
    const { args, open } = await make();
    const first = await start([...args, mode, 'wait']);
    const poison = createTestWebhook('video.failed', { secret: 'whsec_poison' });
    const fine = [createTestWebhook('video.completed', { secret: 'whsec_poison' }), createTestWebhook('video.completed', { secret: 'whsec_poison' })];
    expect(await post(first.url, poison)).toBe(202);
    for (const hook of fine) expect(await post(first.url, hook)).toBe(202);
    first.proc.stdin.write('go\n');
    expect(await first.exited).toBe(3);

    // retries: 1, so two runs: the first child's, and one more start's. Each start that survives has
    // the poison dead and both others done.
    let exits = 1;
    for (let starts = 0; starts < 6; starts++) {
      const next = await start([...args, mode]);
      // Asks the child's stats until the poison is dead and both others done; `null` once it has exited.
      const settled = async (): Promise<InboxStats | null> => {
        for (;;) {
          const stats = await next.stats().catch(() => null);
          if (stats === null || (stats.dead === 1 && stats.done === 2)) return stats;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      type Outcome = { code: number | null | 'alive' };
      const ended = next.exited.then((code): Outcome => ({ code }));
      const outcome = await Promise.race<Outcome>([ended, settled().then((stats): Outcome | Promise<Outcome> => (stats ? { code: 'alive' } : ended))]);
      if (outcome.code !== 'alive') {
        expect(outcome.code).toBe(3);
        exits++;
        continue;
      }
      expect(await next.stats()).toEqual({ pending: 0, running: 0, dead: 1, done: 2 });
      next.proc.kill('SIGKILL');
      await next.exited;
      break;
    }
    expect(exits).toBe(2);
    expect(handled.map(([id]) => id).sort()).toEqual(fine.map((hook) => hook.event.id).sort());
    const inbox = await open();
    try {
      expect(await inbox.get(`e:video.failed:${(JSON.parse(poison.body) as { id: number }).id}`)).toMatchObject({ deliveryId: poison.deliveryId, state: 'dead', attempts: 2, lastError: expect.stringContaining('The process ended while the inbox was running it (run 2 of 2)') });
    } finally {
      await inbox.close();
    }
  }, 60_000);
});
