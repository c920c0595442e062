// Issue 30 section 3: a receiver SIGKILLed with 20 events pending (two of them running) handles all of
// them after its restart: each was on disk before its 202.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { createTestWebhook } from '../../src/index.js';

const child = fileURLToPath(new URL('./inbox-crash.child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(mode: string, dir: string): Promise<{ proc: ChildProcessWithoutNullStreams; url: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, mode, dir], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
  cleanups.push(async () => void proc.kill('SIGKILL'));
  let output = '';
  const port = await new Promise<string>((resolve, reject) => {
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const found = /listening (\d+)/.exec(output);
      if (found) resolve(found[1]!);
    });
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    proc.once('exit', (code) => reject(new Error(`child exited ${code}: ${output}`)));
  });
  return { proc, url: `http://127.0.0.1:${port}/webhooks` };
}

it('handles every one of 20 acknowledged events after a SIGKILL and a restart', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-inbox-crash-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const first = await start('hang', dir);
  const hooks = Array.from({ length: 20 }, () => createTestWebhook('video.completed', { secret: 'whsec_crash' }));
  const statuses = await Promise.all(hooks.map(async (hook) => (await fetch(first.url, { method: 'POST', headers: hook.headers, body: hook.body })).status));
  expect(statuses).toEqual(new Array(20).fill(202));
  first.proc.kill('SIGKILL');
  await new Promise((resolve) => first.proc.once('exit', resolve));

  const second = await start('run', dir);
  const handled = async () => (await readFile(join(dir, 'handled.log'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
  await expect.poll(async () => (await handled()).length, { timeout: 15_000, interval: 50 }).toBe(20);
  const lines = await handled();
  expect(new Set(lines.map((line) => Number(line.split(' ')[0])))).toEqual(new Set(hooks.map((hook) => hook.event.id)));
  // Only the two that were running when the process died may count that run (attempt 2 now): the running
  // mark is written with the next group commit, not awaited.
  const attempts = lines.map((line) => line.split(' ')[1]);
  expect(attempts.filter((a) => a === '1').length).toBeGreaterThanOrEqual(18);
  expect(attempts.every((a) => a === '1' || a === '2')).toBe(true);
  // A redelivery of one of them is a duplicate: the delivery store's mark came with the inbox's write.
  const again = await fetch(second.url, { method: 'POST', headers: hooks[0]!.headers, body: hooks[0]!.body });
  expect(again.status).toBe(200);
  expect(await again.json()).toMatchObject({ duplicate: true });
}, 60_000);
