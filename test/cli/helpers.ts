import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, vi } from 'vitest';
import { main } from '../../src/cli/main.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cliphook …` in this process, capturing what it writes. */
export async function cli(...args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    const code = await main(['node', 'cliphook', ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** Starts `cliphook …` as a real process (the source, through tsx), colour off. */
export function spawnBin(args: readonly string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  const bin = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));
  return spawn(process.execPath, ['--import', 'tsx', bin, ...args], {
    cwd: fileURLToPath(new URL('../../', import.meta.url)),
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
}

/** Runs `cliphook …` as a real process until it exits. */
export function runBin(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnBin(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** A temporary folder, removed by the returned function. */
export async function tempDir(): Promise<[string, () => Promise<void>]> {
  const dir = await mkdtemp(join(tmpdir(), 'cliphook-cli-'));
  return [dir, () => rm(dir, { recursive: true, force: true })];
}

/**
 * An outbox file holding `ids` as pending deliveries to `url`, due at once, as a `trigger --retry` that
 * was killed would leave it; with `keep`, after the deliveries the file already holds.
 */
export async function pendingOutbox(file: string, url: string, secret: string, ids: readonly string[], { keep = false } = {}): Promise<void> {
  const kept: unknown[] = keep ? JSON.parse(await readFile(file, 'utf8')).deliveries : [];
  const deliveries = ids.map((id, i) => ({
    id, url, secret, event: 'video.completed', state: 'pending', retry: false, createdAt: Date.now() - 60_000 + i,
    nextAttemptAt: Date.now() - 1000, round: 0, attempts: [],
    payload: {
      event: 'video.completed', id: 1000 + i, status: 'done', prompt: 'A red fox', video_url: `https://app.example.com/videos/${1000 + i}`,
      error: null, error_code: null, credits_used: 18, duration: 10, model: 'standard',
      created_at: '2026-11-21T23:57:12Z', completed_at: '2026-11-21T23:58:49Z',
    },
  }));
  await writeFile(file, JSON.stringify({ version: 1, deliveries: [...kept, ...deliveries] }));
}

/**
 * A fresh outbox path per test (in a temporary folder removed afterwards), colour off. Read the path
 * through `outbox()` inside a test. `cleanups` runs after each test, newest first.
 */
export function useOutbox() {
  const cleanups: (() => Promise<void>)[] = [];
  let file = '';
  beforeEach(async () => {
    process.env.NO_COLOR = '1';
    const [dir, remove] = await tempDir();
    cleanups.push(remove);
    file = join(dir, 'outbox.json');
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return { cleanups, outbox: () => file };
}

/**
 * Starts `cliphook serve --port 0 --json …` as a real process and resolves with its ready line once it
 * prints it; `stop()` sends SIGTERM and waits for the exit. Rejects with its stderr if it exits first.
 */
export async function startServe(args: readonly string[], env: Record<string, string> = {}) {
  const child = spawnBin(['serve', '--port', '0', '--json', ...args], env);
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  try {
    const ready = await new Promise<Record<string, any>>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr.on('data', (chunk) => (err += chunk));
      child.stdout.on('data', (chunk) => {
        out += chunk;
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve(JSON.parse(line));
      });
      child.once('close', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
    });
    return { child, ready, exited, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
