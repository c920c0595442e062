import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { startReceiver } from '../emitter/helpers.js';

const child = fileURLToPath(new URL('./emitter-crash.child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function run(args: string[]): ChildProcessWithoutNullStreams & { output: string[] } {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
  const output: string[] = [];
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(...chunk.split('\n').filter(Boolean)));
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => output.push(`stderr: ${chunk}`));
  cleanups.push(async () => void proc.kill('SIGKILL'));
  return Object.assign(proc, { output });
}

function exited(proc: ChildProcessWithoutNullStreams): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
}

/** A deterministic stream of numbers in [0, 1), so the 30 % of failures are the same on every run. */
function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

it('loses no delivery when the emitting process is SIGKILLed mid-run and restarted', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-crash-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const outbox = join(dir, 'outbox.json');
  const random = mulberry32(42);
  let failures = 0;
  const receiver = await startReceiver('whsec_crash', Date.now, () => {
    if (random() >= 0.3) return null;
    failures++;
    return failures % 2 ? 500 : 503;
  });
  cleanups.push(() => receiver.close());
  const handledIds = () => new Set(receiver.handled.map((event) => (event as { id: number }).id));

  const first = run(['send', outbox, receiver.url, '1000']);
  await expect.poll(() => first.output.includes('queued') && receiver.handled.length >= 150, { timeout: 40_000, interval: 5 }).toBe(true);
  first.kill('SIGKILL');
  expect(await exited(first)).toMatchObject({ signal: 'SIGKILL' });
  const beforeCrash = handledIds().size;
  expect(beforeCrash).toBeLessThan(1000); // killed mid-run, not after

  const second = run(['resume', outbox]);
  const { code } = await exited(second);
  expect(second.output.filter((line) => line.startsWith('stderr'))).toEqual([]);
  expect(code).toBe(0);
  expect(second.output.at(-1)).toBe('done 1000 0');

  // Every delivery arrived at least once; the receiver's dedupe ran each handler once.
  expect(handledIds().size).toBe(1000);
  expect(receiver.handled).toHaveLength(1000);
  expect(failures).toBeGreaterThan(200);
  const stored = JSON.parse(await readFile(outbox, 'utf8')) as { deliveries: { state: string }[] };
  expect(stored.deliveries).toHaveLength(1000);
  expect(stored.deliveries.every((d) => d.state === 'delivered')).toBe(true);
}, 60_000);
