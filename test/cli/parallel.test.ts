import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { answering, startServer } from '../emitter/helpers.js';
import { cli, pendingOutbox, runBin, spawnBin, useOutbox } from './helpers.js';

// Issue 10: `cliphook trigger` processes share one outbox file.
const secret = 'whsec_cli_parallel';
const { cleanups, outbox: outboxFile } = useOutbox();

/** How many requests carried each delivery id. */
function sends(received: { headers: Record<string, unknown> }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of received) {
    const id = r.headers['x-service-delivery'] as string;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

async function listed(): Promise<{ id: string; state: string; attempts: unknown[] }[]> {
  const result = await cli('deliveries', 'list', '--json', '--limit', '100', '--outbox', outboxFile());
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

const ownId = (stdout: string) => /^--> video\.completed \[(dlv_\w+)\]$/m.exec(stdout)?.[1];

describe('parallel triggers on one outbox', () => {
  it('each delivers its event once, a delivery left pending by a dead trigger goes once, and no record vanishes', async () => {
    const server = await answering(200);
    cleanups.push(() => server.close());
    const first = await cli('trigger', 'video.completed', '--url', server.url, '--secret', secret, '--outbox', outboxFile());
    expect(first.code).toBe(0);
    const orphans = ['dlv_orphan_a', 'dlv_orphan_b', 'dlv_orphan_c'];
    await pendingOutbox(outboxFile(), server.url, secret, orphans, { keep: true });

    const runs = await Promise.all(Array.from({ length: 5 }, () =>
      runBin(['trigger', 'video.completed', '--url', server.url, '--outbox', outboxFile()], { CLIPHOOK_SECRET: secret })));
    for (const run of runs) {
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
    }
    const own = runs.map((run) => ownId(run.stdout)!);
    const all = [ownId(first.stdout)!, ...orphans, ...own];
    expect(new Set(all).size).toBe(9);
    expect(Object.fromEntries(sends(server.received))).toEqual(Object.fromEntries(all.map((id) => [id, 1])));
    const records = await listed();
    expect(records.map((d) => d.id).sort()).toEqual([...all].sort());
    expect(records.every((d) => d.state === 'delivered')).toBe(true);
  }, 60_000);

  it('never sends a delivery a running trigger --retry is waiting to retry, even once it is due, and that retry goes once', async () => {
    // The first request (the --retry trigger's first attempt) is refused; every other one is taken.
    const server = await startServer((_req, res) => {
      res.writeHead(server.received.length === 1 ? 503 : 200);
      res.end();
    });
    cleanups.push(() => server.close());
    // This process's clock runs 10 minutes behind the children's: its retry is overdue by theirs.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.now() - 600_000 });
    try {
      const retrying = cli('trigger', 'video.completed', '--retry', '--url', server.url, '--secret', secret, '--outbox', outboxFile());
      await vi.waitFor(async () => expect(JSON.parse(await readFile(outboxFile(), 'utf8')).deliveries[0].attempts).toHaveLength(1));
      const id = server.received[0]!.headers['x-service-delivery'] as string;

      const trigger = () => runBin(['trigger', 'video.completed', '--retry', '--url', server.url, '--outbox', outboxFile()], { CLIPHOOK_SECRET: secret });
      const [b, c, redeliver] = await Promise.all([trigger(), trigger(), runBin(['deliveries', 'redeliver', id, '--outbox', outboxFile()])]);
      for (const run of [b, c]) {
        expect(run.code).toBe(0);
        expect(run.stdout).not.toContain('resuming');
        expect(run.stdout).not.toContain(id);
      }
      expect(redeliver.code).toBe(1);
      expect(redeliver.stderr).toMatch(new RegExp(`^cliphook: delivery ${id} is being sent by process ${process.pid} on .*, a running trigger or redeliver; redeliver it once that one has ended\\n$`));
      expect(sends(server.received).get(id)).toBe(1);

      await vi.advanceTimersByTimeAsync(30_000);
      const result = await retrying;
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/<-- \[503\] POST [^\n]+\n {4}next attempt in 30 s[^\n]+\n<-- \[200\] POST /);
      expect(Object.fromEntries(sends(server.received))).toEqual({ [id]: 2, [ownId(b.stdout)!]: 1, [ownId(c.stdout)!]: 1 });
    } finally {
      vi.useRealTimers();
    }
    const records = await listed();
    expect(records).toHaveLength(3);
    expect(records.every((d) => d.state === 'delivered')).toBe(true);
    expect(records.find((d) => d.attempts.length === 2)?.id).toBe(server.received[0]!.headers['x-service-delivery']);
  }, 60_000);

  it('resumes, once, the delivery of a trigger --retry that was killed while it waited', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(server.received.length === 1 ? 503 : 200);
      res.end();
    });
    cleanups.push(() => server.close());
    const killed = spawnBin(['trigger', 'video.completed', '--retry', '--url', server.url, '--outbox', outboxFile()], { CLIPHOOK_SECRET: secret });
    cleanups.push(async () => void killed.kill('SIGKILL'));
    await vi.waitFor(async () => expect(JSON.parse(await readFile(outboxFile(), 'utf8')).deliveries[0].attempts).toHaveLength(1), { timeout: 15_000 });
    killed.kill('SIGKILL'); // no exit hook runs: its sender lock stays behind, its pid dead
    await new Promise((resolve) => killed.once('exit', resolve));
    const id = server.received[0]!.headers['x-service-delivery'] as string;

    // 10 minutes on, its retry is due.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.now() + 600_000 });
    try {
      const result = await cli('trigger', 'video.completed', '--url', server.url, '--secret', secret, '--outbox', outboxFile());
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`--> video.completed [${id}] (resumed from the outbox)`);
      expect(Object.fromEntries(sends(server.received))).toEqual({ [id]: 2, [ownId(result.stdout)!]: 1 });
    } finally {
      vi.useRealTimers();
    }
    expect((await listed()).map((d) => d.state)).toEqual(['delivered', 'delivered']);
  }, 30_000);

  it('repairs a torn outbox instead of refusing: trigger goes on, and every complete delivery in it is kept and sent', async () => {
    const server = await answering(200);
    cleanups.push(() => server.close());
    await pendingOutbox(outboxFile(), server.url, secret, ['dlv_torn_a', 'dlv_torn_b', 'dlv_torn_c']);
    const whole = await readFile(outboxFile(), 'utf8');
    const torn = whole.slice(0, whole.indexOf('dlv_torn_c') + 40); // cut inside the third delivery
    await writeFile(outboxFile(), torn);

    // Looking shows what can be recovered and changes nothing.
    const look = await cli('deliveries', 'list', '--json', '--outbox', outboxFile());
    expect(look.code).toBe(0);
    expect(JSON.parse(look.stdout).map((d: { id: string }) => d.id)).toEqual(['dlv_torn_b', 'dlv_torn_a']);
    expect(look.stderr).toMatch(/^cliphook: warning: .* is torn \(not valid JSON\): showing the 2 complete deliveries in it; the next trigger repairs it\n$/);
    expect(await readFile(outboxFile(), 'utf8')).toBe(torn);

    const result = await cli('trigger', 'video.completed', '--url', server.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^cliphook: warning: .* was torn \(not valid JSON\): recovered 2 deliveries from it; the torn file is kept as .*outbox\.json\.torn-\d+\n$/);
    expect(result.stdout).toContain('(resuming 2 pending deliveries from');
    const own = ownId(result.stdout)!;
    expect(Object.fromEntries(sends(server.received))).toEqual({ dlv_torn_a: 1, dlv_torn_b: 1, [own]: 1 });
    expect((await listed()).map((d) => [d.id, d.state]).sort()).toEqual([['dlv_torn_a', 'delivered'], ['dlv_torn_b', 'delivered'], [own, 'delivered']].sort());
    const aside = (await readdir(dirname(outboxFile()))).filter((name) => name.startsWith('outbox.json.torn-'));
    expect(aside).toHaveLength(1);
    expect(await readFile(`${dirname(outboxFile())}/${aside[0]}`, 'utf8')).toBe(torn);
  });
});
