// Issue 30 section 3: a receiver SIGKILLed with 20 events pending (two of them running) handles all of
// them after its restart: each was on disk before its 202. The events are the simulated service's
// webhooks for 20 clips; the receiver is a child process on its own port.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { SimulatedClock, startService } from 'cliphook/service';

const child = fileURLToPath(new URL('./inbox-crash.child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(mode: string, dir: string, secret: string, port = 0): Promise<{ proc: ChildProcessWithoutNullStreams; url: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, mode, dir, secret, String(port)], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
  cleanups.push(async () => void proc.kill('SIGKILL'));
  let output = '';
  const listening = await new Promise<string>((resolve, reject) => {
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const found = /listening (\d+)/.exec(output);
      if (found) resolve(found[1]!);
    });
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    proc.once('exit', (code) => reject(new Error(`child exited ${code}: ${output}`)));
  });
  return { proc, url: `http://127.0.0.1:${listening}/webhooks` };
}

it('handles every one of 20 acknowledged clip webhooks after a SIGKILL and a restart', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-inbox-crash-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const svc = await startService({ clock: new SimulatedClock({ frozen: true }) });
  cleanups.push(() => svc.close());
  const first = await start('hang', dir, svc.webhookSecret);
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: `clip ${i}`, callback_url: first.url }) });
    ids.push(((await res.json()) as { id: number }).id);
  }
  await svc.clock.advance(10_000); // the clips end; each webhook is answered 202 once it is on disk
  const deliveries = () => svc.emitter.list({ limit: 100 });
  expect(deliveries().map((d) => d.attempts.map((a) => a.status))).toEqual(new Array(20).fill([202]));
  first.proc.kill('SIGKILL');
  await new Promise((resolve) => first.proc.once('exit', resolve));

  // The same port, so the service's redelivery below reaches the restarted receiver.
  const second = await start('run', dir, svc.webhookSecret, Number(new URL(first.url).port));
  const handled = async () => (await readFile(join(dir, 'handled.log'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
  await expect.poll(async () => (await handled()).length, { timeout: 15_000, interval: 50 }).toBe(20);
  const lines = await handled();
  expect(new Set(lines.map((line) => Number(line.split(' ')[0])))).toEqual(new Set(ids));
  // Only the two that were running when the process died may count that run (attempt 2 now): the running
  // mark is written with the next group commit, not awaited.
  const attempts = lines.map((line) => line.split(' ')[1]);
  expect(attempts.filter((a) => a === '1').length).toBeGreaterThanOrEqual(18);
  expect(attempts.every((a) => a === '1' || a === '2')).toBe(true);
  // A redelivery of one of them is a duplicate: the delivery store's mark came with the inbox's write.
  const again = await svc.emitter.redeliver(deliveries()[0]!.id);
  await expect.poll(() => svc.emitter.get(again.id)?.attempts.length, { timeout: 5_000 }).toBe(2);
  expect(svc.emitter.get(again.id)!.attempts[1]).toMatchObject({ status: 200, response: expect.stringContaining('"duplicate":true') });
  expect((await handled()).length).toBe(20);
  void second;
}, 60_000);
