import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { answering, startReceiver, startServer } from '../emitter/helpers.js';
import { cli, pendingOutbox, useOutbox } from './helpers.js';

const secret = 'whsec_cli_deliveries';
const { cleanups, outbox: outboxFile } = useOutbox();

async function triggered(url: string): Promise<string> {
  const result = await cli('trigger', 'video.completed', '--url', url, '--secret', secret, '--outbox', outboxFile());
  return /\[(dlv_\w+)\]/.exec(result.stdout)![1]!;
}

describe('cliphook deliveries', () => {
  it('lists newest first, filters by state, and says so when empty', async () => {
    expect((await cli('deliveries', 'list', '--outbox', outboxFile())).stdout).toMatch(/^No deliveries in /);
    const ok = await answering(200);
    const bad = await answering(500);
    cleanups.push(() => ok.close(), () => bad.close());
    const first = await triggered(ok.url);
    const second = await triggered(bad.url);
    const listed = await cli('deliveries', 'list', '--outbox', outboxFile());
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^${second}\\s+video\\.completed\\s+failed\\s+\\[500\\]\\s+1 attempt `));
    expect(lines[1]).toMatch(new RegExp(`^${first}\\s+video\\.completed\\s+delivered\\s+\\[200\\]`));
    const failed = JSON.parse((await cli('deliveries', 'list', '--state', 'failed', '--json', '--outbox', outboxFile())).stdout);
    expect(failed.map((d: { id: string }) => d.id)).toEqual([second]);
    expect((await cli('deliveries', 'list', '--state', 'odd', '--outbox', outboxFile())).code).toBe(2);
  });

  it('shows one delivery with its attempts and payload, never its secret', async () => {
    const server = await answering(503, '{"busy":true}');
    cleanups.push(() => server.close());
    const id = await triggered(server.url);
    const shown = await cli('deliveries', 'show', id, '--outbox', outboxFile());
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`${id}  video.completed  failed`);
    expect(shown.stdout).toMatch(/1\. \S+Z {2}\[503\] {2}\d+ ms {2}\{"busy":true\}/);
    expect(shown.stdout).toContain('"event": "video.completed"');
    expect(shown.stdout).not.toContain(secret);
    const missing = await cli('deliveries', 'show', 'dlv_missing', '--outbox', outboxFile());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no delivery dlv_missing/);
  });

  it('never writes the outbox for list and show, and creates nothing when there is none', async () => {
    const { readFile, stat, writeFile } = await import('node:fs/promises');
    const { dirname } = await import('node:path');
    const missing = join(dirname(outboxFile()), 'nowhere', 'outbox.json');
    expect((await cli('deliveries', 'list', '--outbox', missing)).code).toBe(0);
    await expect(stat(dirname(missing))).rejects.toMatchObject({ code: 'ENOENT' });
    const server = await answering(200);
    cleanups.push(() => server.close());
    const id = await triggered(server.url);
    // Written as another process would leave it, so that any rewrite shows.
    const text = JSON.stringify(JSON.parse(await readFile(outboxFile(), 'utf8')), null, 4);
    await writeFile(outboxFile(), text);
    const before = await stat(outboxFile());
    expect((await cli('deliveries', 'list', '--outbox', outboxFile())).code).toBe(0);
    expect((await cli('deliveries', 'show', id, '--outbox', outboxFile())).code).toBe(0);
    expect(await readFile(outboxFile(), 'utf8')).toBe(text);
    expect((await stat(outboxFile())).ino).toBe(before.ino);
  });

  it('redelivers with the same delivery id and a fresh signature, and exits like trigger', async () => {
    let fail = true;
    const receiver = await startReceiver(secret, Date.now, () => (fail ? 500 : null));
    cleanups.push(() => receiver.close());
    const id = await triggered(receiver.url);
    fail = false;
    const again = await cli('deliveries', 'redeliver', id, '--outbox', outboxFile());
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`^--> video\\.completed \\[${id}\\]\\n<-- \\[200\\] POST `));
    expect(receiver.received.map((r) => r.headers['x-service-delivery'])).toEqual([id, id]);
    expect(receiver.received[0]!.headers['x-service-signature']).not.toBe(receiver.received[1]!.headers['x-service-signature']);
    const shown = JSON.parse((await cli('deliveries', 'show', id, '--json', '--outbox', outboxFile())).stdout);
    expect(shown.attempts.map((a: { status: number }) => a.status)).toEqual([500, 200]);
    expect((await cli('deliveries', 'redeliver', 'dlv_missing', '--outbox', outboxFile())).code).toBe(1);
  });

  it('redeliver prints the other pending deliveries it resumes from the outbox', async () => {
    const server = await answering(200);
    cleanups.push(() => server.close());
    await pendingOutbox(outboxFile(), server.url, secret, ['dlv_target', 'dlv_other']);
    const result = await cli('deliveries', 'redeliver', 'dlv_target', '--outbox', outboxFile());
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe(`(resuming 1 pending delivery from ${outboxFile()})`);
    const sent = lines.indexOf('--> video.completed [dlv_other] (resumed from the outbox)');
    expect(sent).toBeGreaterThan(0);
    expect(lines[sent + 1]).toMatch(/^<-- \[200\] POST /);
    expect(lines.filter((line) => line.includes('dlv_target'))).toEqual(['--> video.completed [dlv_target]']);
    expect(server.received.map((r) => r.headers['x-service-delivery']).sort()).toEqual(['dlv_other', 'dlv_target']);
  });

  it('exits 1 when a redelivery ends at a relay that no listener wanted it from (202 filtered_by_listener)', async () => {
    const relay = await answering(202, '{"relayed":false,"reason":"filtered_by_listener"}');
    cleanups.push(() => relay.close());
    const id = await triggered(relay.url);
    const again = await cli('deliveries', 'redeliver', id, '--outbox', outboxFile());
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no listener wanted video\.completed \(202 filtered_by_listener\), so nothing reached your app/);
  });

  it('exits 1 when a redelivery fails', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(404);
      res.end();
    });
    cleanups.push(() => server.close());
    const id = await triggered(server.url);
    const again = await cli('deliveries', 'redeliver', id, '--outbox', outboxFile());
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/answered 404/);
  });
});

describe('an outbox that cannot be read', () => {
  it('ends trigger, list and redeliver with exit 1 and the reason, and leaves the file alone', async () => {
    const { writeFile, readFile } = await import('node:fs/promises');
    await writeFile(outboxFile(), '{"not":"an outbox"}');
    for (const args of [
      ['trigger', 'video.completed', '--url', 'http://127.0.0.1:9/', '--secret', secret],
      ['deliveries', 'list'],
      ['deliveries', 'redeliver', 'dlv_x'],
    ]) {
      const result = await cli(...args, '--outbox', outboxFile());
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr).toMatch(/^cliphook: cannot (use|read) the outbox: .*not a cliphook outbox file/);
    }
    expect(await readFile(outboxFile(), 'utf8')).toBe('{"not":"an outbox"}');
  });
});
