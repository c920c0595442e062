import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { VIDEO_ERROR_CODES } from 'cliphook';
import { ERROR_SENTENCES } from '../../src/protocol/events.js';
import { createRelayServer } from '../../src/relay/server.js';
import { answering, startReceiver } from '../emitter/helpers.js';
import { cli, pendingOutbox, useOutbox } from './helpers.js';

const secret = 'whsec_cli_test';
const { cleanups, outbox: outboxFile } = useOutbox();

describe('cliphook trigger', () => {
  it('delivers to a real receiver, prints Stripe-like lines and exits 0', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    const result = await cli('trigger', 'video.completed', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^--> video\.completed \[dlv_[0-9a-f]{24}\]$/);
    expect(lines[1]).toMatch(new RegExp(`^<-- \\[200\\] POST ${receiver.url.replace(/[.]/g, '\\.')} \\(\\d+ ms\\)$`));
    expect(lines).toHaveLength(2);
    expect(receiver.handled).toHaveLength(1);
    const request = receiver.received[0]!;
    expect(await octokitVerify(secret, request.body, request.headers['x-service-signature'] as string)).toBe(true);
    expect(lines[0]).toContain(request.headers['x-service-delivery'] as string);
    const stored = JSON.parse(await readFile(outboxFile(), 'utf8'));
    expect(stored.deliveries[0].state).toBe('delivered');
  });

  it('gives each send a fresh video id and delivery id', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    for (let i = 0; i < 2; i++) expect((await cli('trigger', 'video.completed', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile())).code).toBe(0);
    const bodies = receiver.received.map((r) => JSON.parse(r.body));
    expect(bodies[0].id).not.toBe(bodies[1].id);
    expect(receiver.received[0]!.headers['x-service-delivery']).not.toBe(receiver.received[1]!.headers['x-service-delivery']);
    expect(receiver.handled).toHaveLength(2); // not deduplicated by the receiver
  });

  it('sets --error-code with its sentence and applies --set', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    const result = await cli('trigger', 'video.failed', '--error-code', 'content_rejected', '--set', 'prompt=a red fox', '--set', 'credits_used=0',
      '--set', 'model=null', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(0);
    const body = JSON.parse(receiver.received[0]!.body);
    expect(body).toMatchObject({ event: 'video.failed', status: 'error', error_code: 'content_rejected', error: ERROR_SENTENCES.content_rejected, prompt: 'a red fox', model: null });
  });

  it('--set id=777: the video_url names clip 777 too, unless --set video_url says otherwise', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    const result = await cli('trigger', 'video.completed', '--set', 'id=777', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(0);
    expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ id: 777, video_url: 'https://app.example.com/videos/777' });
    const own = await cli('trigger', 'video.completed', '--set', 'video_url=https://cdn.example.com/a.mp4', '--set', 'id=778', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(own.code).toBe(0);
    expect(JSON.parse(receiver.received[1]!.body)).toMatchObject({ id: 778, video_url: 'https://cdn.example.com/a.mp4' });
  });

  it('has a sentence for every error code of spec 2.9', () => {
    for (const code of VIDEO_ERROR_CODES) expect(ERROR_SENTENCES[code], code).toMatch(/\.$/);
  });

  it('exits 1 with a one-line reason when the receiver refuses the signature', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    const result = await cli('trigger', 'video.completed', '--url', receiver.url, '--secret', 'whsec_wrong', '--outbox', outboxFile());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/<-- \[401\] POST/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^cliphook: delivery dlv_\w+ failed after 1 attempt: the receiver answered 401; a 4xx is permanent/);
    expect(receiver.handled).toHaveLength(0);
  });

  it("exits 1 and says nothing reached the app when a relay answers 202 filtered_by_listener", async () => {
    const relay = await answering(202, '{"relayed":false,"reason":"filtered_by_listener"}', { 'content-type': 'application/json' });
    cleanups.push(() => relay.close());
    const result = await cli('trigger', 'video.completed', '--url', relay.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/<-- \[202\] POST /);
    expect(result.stderr).toMatch(/^cliphook: delivery dlv_\w+ reached the relay, but no listener wanted video\.completed \(202 filtered_by_listener\), so nothing reached your app; check the --events of `cliphook listen`\n$/);
    // An app's own 202, or a relay that relayed it, is a delivery like any other.
    const app = await answering(202, '{"queued":true}');
    cleanups.push(() => app.close());
    expect((await cli('trigger', 'video.completed', '--url', app.url, '--secret', secret, '--outbox', outboxFile())).code).toBe(0);
  });

  // Issue 20 item 18: it said "the receiver answered 503" and suggested --retry, though the relay keeps the event.
  it('says a relay with no listener on the channel kept the event (503 no_listener), not that a receiver answered 503', async () => {
    const relay = createRelayServer({ file: false });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    const channel = await relay.createChannel(url);
    const result = await cli('trigger', 'video.completed', '--url', channel.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/<-- \[503\] POST /);
    expect(result.stderr).toMatch(
      /^cliphook: delivery dlv_\w+ is buffered at the relay: no `cliphook listen` is connected to that channel \(503 no_listener\); the relay passes it on when one connects\n$/,
    );
  });

  it('exits 1 on a 500 and suggests --retry', async () => {
    const server = await answering(500);
    cleanups.push(() => server.close());
    const result = await cli('trigger', 'video.completed', '--url', server.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/answered 500 \(add --retry to follow the retry schedule\)/);
  });

  it('follows the retry schedule with --retry, printing when the next attempt is due', async () => {
    let fail = true;
    const receiver = await startReceiver(secret, Date.now, () => (fail ? 503 : null));
    cleanups.push(() => receiver.close());
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const running = cli('trigger', 'video.completed', '--retry', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
      await vi.waitFor(() => expect(receiver.received).toHaveLength(1));
      fail = false;
      await vi.advanceTimersByTimeAsync(29_000);
      expect(receiver.received).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1_000);
      const result = await running;
      expect(result.code).toBe(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines[1]).toMatch(/^<-- \[503\] POST /);
      expect(lines[2]).toMatch(/^ {4}next attempt in 30 s \(at \d\d:\d\d:\d\d UTC\)/);
      expect(lines[3]).toMatch(/^<-- \[200\] POST /);
      expect(receiver.received.map((r) => r.headers['x-service-delivery'])).toEqual(new Array(2).fill(receiver.received[0]!.headers['x-service-delivery']));
    } finally {
      vi.useRealTimers();
    }
  });

  it('prints the pending deliveries it resumes from the outbox, and sends none unseen', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    await pendingOutbox(outboxFile(), receiver.url, secret, ['dlv_resumed_a', 'dlv_resumed_b']);
    const result = await cli('trigger', 'video.completed', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe(`(resuming 2 pending deliveries from ${outboxFile()})`);
    for (const id of ['dlv_resumed_a', 'dlv_resumed_b']) {
      const sent = lines.indexOf(`--> video.completed [${id}] (resumed from the outbox)`);
      expect(sent, id).toBeGreaterThan(0);
      expect(lines[sent + 1]).toMatch(/^<-- \[200\] POST /);
    }
    expect(lines).toHaveLength(7); // the resume line, 2 lines for each resumed delivery, 2 for its own
    expect(receiver.received).toHaveLength(3);

    // With --json the extra lines go to stderr; stdout stays one JSON document.
    await pendingOutbox(outboxFile(), receiver.url, secret, ['dlv_resumed_c']);
    const json = await cli('trigger', 'video.completed', '--json', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'delivered' });
    expect(json.stderr).toContain(`(resuming 1 pending delivery from ${outboxFile()})`);
    expect(json.stderr).toContain('--> video.completed [dlv_resumed_c] (resumed from the outbox)');
  });

  it('prints the delivery as JSON with --json', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    const result = await cli('trigger', 'video.completed', '--json', '--url', receiver.url, '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(0);
    const delivery = JSON.parse(result.stdout);
    expect(delivery).toMatchObject({ event: 'video.completed', state: 'delivered', attempts: [{ status: 200 }] });
    expect(result.stdout).not.toContain(secret);
  });

  it.each([
    [['video.nope'], /unknown event "video.nope"/],
    [['video.completed', '--error-code', 'upstream_busy'], /--error-code goes with video.failed only/],
    [['video.failed', '--error-code', 'nope'], /unknown --error-code "nope"/],
    [['video.completed', '--set', 'credits_used=lots'], /credits_used/],
    [['video.completed', '--set', 'novalue'], /--set expects key=value/],
    [['video.completed', '--set', 'promt=a fox'], /^cliphook: --set promt: video\.completed has no field `promt`; its fields are id, status, prompt, video_url, error, error_code, credits_used, duration, model, created_at, completed_at\n$/],
    [['video.failed', '--set', 'extra=1'], /video\.failed has no field `extra`; its fields are id, status, prompt, video_url, error, error_code/],
    [['video.completed', '--set', ' =x'], /--set expects key=value with a key, got " =x"/],
    [['video.completed', '--timeout', '0'], /--timeout/],
    [['video.completed', '--timeout', '3000000000'], /--timeout expects .*at most 2147483647/],
  ])('exits 2 for a usage error: %j', async (args, message) => {
    const result = await cli('trigger', ...args, '--url', 'http://127.0.0.1:9/', '--secret', secret, '--outbox', outboxFile());
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.each([
    [['--secret', secret], /^cliphook: trigger needs --url <url>/],
    [['--url', 'http://127.0.0.1:9/'], /^cliphook: trigger needs --secret <secret> \(or CLIPHOOK_SECRET\)/],
  ])('exits 2 with one line when a required option is missing: %j', async (args, message) => {
    const saved = process.env.CLIPHOOK_SECRET;
    delete process.env.CLIPHOOK_SECRET;
    try {
      const result = await cli('trigger', 'video.completed', ...args, '--outbox', outboxFile());
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      if (saved !== undefined) process.env.CLIPHOOK_SECRET = saved;
    }
  });

  it('runs as a real process: the bin exits 0 when delivered and 1 when not', async () => {
    const receiver = await startReceiver(secret, Date.now);
    cleanups.push(() => receiver.close());
    const bin = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));
    const run = (url: string) => new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', bin, 'trigger', 'video.failed', '--url', url, '--outbox', outboxFile()], {
        env: { ...process.env, CLIPHOOK_SECRET: secret, NO_COLOR: '1' },
        cwd: fileURLToPath(new URL('../../', import.meta.url)),
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    const ok = await run(receiver.url);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^--> video\.failed \[dlv_\w+\]\n<-- \[200\] POST /);
    const refused = await run('http://127.0.0.1:9/webhooks');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^cliphook: delivery dlv_\w+ failed after 1 attempt: .*ECONNREFUSED/);
  }, 30_000);
});
