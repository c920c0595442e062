// Issue 30 item 1: `cliphook inbox list|show|replay|purge` on a file inbox (app stopped) and a Redis one (live).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createReceiver, createTestWebhook, MemoryDeliveryStore, type InboxOptions, type WebhookContext } from '../../src/index.js';
import { parseBefore } from '../../src/cli/commands/inbox.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { cli, tempDir } from './helpers.js';

const SECRET = 'whsec_cli_inbox';
const redis = redisAvailable() ? await startRedis() : null;
afterAll(() => redis?.stop());
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A receiver (the app) whose handler fails for video.failed; `seen` records each run's context. */
function app(inbox: InboxOptions) {
  const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { retries: 0, ...inbox } });
  receiver.onError(() => undefined);
  const seen: Array<Pick<WebhookContext, 'deliveryId' | 'source'>> = [];
  let fixed = false;
  receiver.onAny((event, { deliveryId, source }) => {
    if (event.event === 'video.failed' && !fixed) throw new Error('cannot refund');
    seen.push({ deliveryId, source });
  });
  const send = async (name: 'video.completed' | 'video.failed') => {
    const hook = createTestWebhook(name, { secret: SECRET });
    expect((await receiver.receive(Buffer.from(hook.body), hook.headers)).status).toBe(202);
    // The inbox's id of the event (its event key), and the delivery id its handler sees.
    return { id: `e:${name}:${hook.event.id}`, deliveryId: hook.deliveryId };
  };
  return { receiver, seen, send, fix: () => void (fixed = true) };
}

describe('cliphook inbox on a file', () => {
  it('lists, shows, replays and purges while the app is stopped', async () => {
    const [dir, remove] = await tempDir();
    cleanups.push(remove);
    const file = join(dir, 'inbox.json');
    const first = app({ file });
    const { id: done } = await first.send('video.completed');
    const { id: dead, deliveryId: deadDelivery } = await first.send('video.failed');
    await vi.waitFor(async () => expect(await first.receiver.inbox!.stats()).toMatchObject({ done: 1, dead: 1 }));
    await first.receiver.close();

    const listed = await cli('inbox', 'list', '--file', file);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(listed.stdout).toMatch(new RegExp(`${dead}\\s+video\\.failed\\s+dead\\s+1 run\\s+\\S+Z\\s+webhook\\s+cannot refund`));
    expect(listed.stdout).toMatch(new RegExp(`${done}\\s+video\\.completed\\s+done`));
    const deadOnly = JSON.parse((await cli('inbox', 'list', '--state', 'dead', '--json', '--file', file)).stdout) as Array<{ id: string }>;
    expect(deadOnly.map((r) => r.id)).toEqual([dead]);

    const shown = await cli('inbox', 'show', dead, '--file', file);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`${dead}  video.failed  dead`);
    expect(shown.stdout).toContain('  error     cannot refund');
    expect(shown.stdout).toContain('"event": "video.failed"');

    const replayed = await cli('inbox', 'replay', dead, '--file', file);
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('pending again: the app runs it at its next start');
    expect((await cli('inbox', 'replay', dead, '--file', file)).stderr).toMatch(/is pending: only a dead or done event can be replayed/);

    const purged = await cli('inbox', 'purge', '--state', 'done', '--file', file);
    expect(purged.stdout).toMatch(/^Purged 1 done event finished before /);

    // The app's next start runs the replayed event, fixed.
    const second = app({ file });
    second.fix();
    await vi.waitFor(() => expect(second.seen).toEqual([{ deliveryId: deadDelivery, source: 'replay' }]));
    await second.receiver.close();
  });

  it('refuses in one line while the app holds the file, naming its lock', async () => {
    const [dir, remove] = await tempDir();
    cleanups.push(remove);
    const child = fileURLToPath(new URL('../e2e/inbox-crash.child.ts', import.meta.url));
    const proc = spawn(process.execPath, ['--import', 'tsx', child, 'hang', dir], { cwd: fileURLToPath(new URL('../../', import.meta.url)) });
    cleanups.push(async () => void proc.kill('SIGKILL'));
    await new Promise<void>((resolve) => proc.stdout.on('data', (chunk: Buffer) => String(chunk).includes('listening') && resolve()));
    const file = join(dir, 'inbox.json');
    const result = await cli('inbox', 'list', '--file', file);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(`is in use by process ${proc.pid}`);
    expect(result.stderr).toContain(`lock ${file}.lock`);
  });

  it('list and show read a file left by a killed app without changing it: no lock taken over, no journal written', async () => {
    const [dir, remove] = await tempDir();
    cleanups.push(remove);
    const child = fileURLToPath(new URL('../e2e/inbox-crash.child.ts', import.meta.url));
    const proc = spawn(process.execPath, ['--import', 'tsx', child, 'hang', dir], { cwd: fileURLToPath(new URL('../../', import.meta.url)) });
    cleanups.push(async () => void proc.kill('SIGKILL'));
    const port = await new Promise<string>((resolve) => proc.stdout.on('data', (chunk: Buffer) => /listening (\d+)/.test(String(chunk)) && resolve(/listening (\d+)/.exec(String(chunk))![1]!)));
    const hooks = [createTestWebhook('video.completed', { secret: 'whsec_crash' }), createTestWebhook('video.failed', { secret: 'whsec_crash' }), createTestWebhook('video.completed', { secret: 'whsec_crash' })];
    for (const hook of hooks) expect((await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: hook.headers, body: hook.body })).status).toBe(202);
    proc.kill('SIGKILL');
    await new Promise((resolve) => proc.once('exit', resolve));
    const file = join(dir, 'inbox.json');
    const before = filesOf(dir);
    expect(Object.keys(before)).toContain('inbox.json.lock');

    const listed = await cli('inbox', 'list', '--json', '--file', file);
    expect(listed.code).toBe(0);
    // Two were running (concurrency 2) when it died: shown as the file holds them, for the app's next start to decide.
    expect((JSON.parse(listed.stdout) as Array<{ state: string }>).map((r) => r.state).sort()).toEqual(['pending', 'running', 'running']);
    // A record is named by its event key.
    const key = `e:video.failed:${(JSON.parse(hooks[1]!.body) as { id: number }).id}`;
    const shown = await cli('inbox', 'show', key, '--file', file);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(key);
    expect(shown.stdout).toContain(`delivery  ${hooks[1]!.deliveryId}`);
    expect(filesOf(dir)).toEqual(before);
  });

  it('answers bad input with a one-line message and exit 2 (or 1 for what is not there)', async () => {
    const [dir, remove] = await tempDir();
    cleanups.push(remove);
    const file = join(dir, 'inbox.json');
    expect((await cli('inbox', 'list', '--file', file)).stderr).toMatch(/no inbox at /);
    expect((await cli('inbox', 'list', '--state', 'odd', '--file', file)).code).toBe(2);
    expect((await cli('inbox', 'list', '--limit', '0', '--file', file)).code).toBe(2);
    expect((await cli('inbox', 'purge', '--state', 'pending', '--file', file)).code).toBe(2);
    expect((await cli('inbox', 'purge', '--state', 'dead', '--before', 'yesterday', '--file', file)).code).toBe(2);
    expect((await cli('inbox', 'list', '--redis', 'http://x')).code).toBe(2);
    // A bare number is not a time: `Date.parse('48')` would make it 2048 and purge every event.
    const bare = await cli('inbox', 'purge', '--state', 'dead', '--before', '48', '--file', file);
    expect(bare.code).toBe(2);
    expect(bare.stderr.trim().split('\n')).toHaveLength(1);
    expect(bare.stderr).toContain('--before expects an ISO 8601 time (2026-12-01 or 2026-12-01T08:00:00Z) or an age such as 30m, 12h or 7d, got "48"');
    for (const text of ['48', '2026', 'Dec 1 2026', '2026-13-45', '7 d', '-7d']) expect(() => parseBefore(text)).toThrow(/--before expects/);
    expect(parseBefore('30m', 3_600_000)).toBe(1_800_000);
    expect(parseBefore('48h', 3 * 86_400_000)).toBe(86_400_000);
    expect(parseBefore('2026-12-01')).toBe(Date.parse('2026-12-01T00:00:00Z'));
    expect(parseBefore('7d', 10 * 86_400_000)).toBe(3 * 86_400_000);
    expect(parseBefore('2026-01-01T00:00:00Z')).toBe(Date.parse('2026-01-01T00:00:00Z'));
  });
});

describe.skipIf(!redis)('cliphook inbox on Redis', () => {
  it('works live while the app runs: list, show, and a replay the app picks up', async () => {
    const prefix = 'cli-inbox:';
    const running = app({ redis: redis!.url, prefix, pollMs: 50 });
    cleanups.push(() => running.receiver.close());
    const { id: dead, deliveryId: deadDelivery } = await running.send('video.failed');
    await vi.waitFor(async () => expect(await running.receiver.inbox!.stats()).toMatchObject({ dead: 1 }));
    const listed = await cli('inbox', 'list', '--redis', redis!.url, '--prefix', prefix);
    expect(listed.stdout).toMatch(new RegExp(`${dead}\\s+video\\.failed\\s+dead`));
    expect((await cli('inbox', 'show', dead, '--redis', redis!.url, '--prefix', prefix)).stdout).toContain('cannot refund');
    running.fix();
    const replayed = await cli('inbox', 'replay', dead, '--redis', redis!.url, '--prefix', prefix);
    expect(replayed.stdout).toContain('a running receiver takes it');
    await vi.waitFor(() => expect(running.seen).toEqual([{ deliveryId: deadDelivery, source: 'replay' }]));
    expect((await cli('inbox', 'show', 'dlv_nope', '--redis', redis!.url, '--prefix', prefix)).code).toBe(1);
  });
});

/** Every file in `dir` with its bytes. */
function filesOf(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), 'latin1')]));
}
