import { spawn } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createChannel, createRelayServer } from 'cliphook';
import { listen, type ListenIo } from '../../src/cli/commands/listen.js';
import { relay } from '../../src/cli/commands/relay.js';
import { ExitError } from '../../src/cli/errors.js';
import { main } from '../../src/cli/main.js';
import { eventText, signedHeaders, startLocalApp, testdir, SECRET } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const plain = (text: string) => text;
const palette = { bold: plain, dim: plain, green: plain, yellow: plain, red: plain, cyan: plain };

/** An io that records lines and resolves `waitFor` when a line matches. */
function recordingIo() {
  const controller = new AbortController();
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const push = (line: string) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  const io: ListenIo = { out: push, err: push, signal: controller.signal, now: () => new Date(2026, 10, 21, 23, 59, 1), palette };
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve) => {
      const seen = lines.find((line) => pattern.test(line));
      if (seen) resolve(seen);
      else waiters.push({ pattern, resolve });
    });
  return { io, lines, waitFor, stop: () => controller.abort() };
}

async function startRelay() {
  const server = createRelayServer({ file: false });
  const { url } = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  return url;
}

describe('cliphook listen', () => {
  it('makes a channel once and keeps it in the state file, so the URL stays the same', async () => {
    const relayUrl = await startRelay();
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const app = await startLocalApp();
    cleanups.push(app.close);
    const options = { forwardTo: `${app.url}/webhooks`, relay: relayUrl, state: `${dir}/listen.json` };
    const urls: string[] = [];
    for (let run = 0; run < 2; run++) {
      const { io, waitFor, stop } = recordingIo();
      const running = listen(options, io);
      urls.push((await waitFor(/^Ready!/)).split(' ')[2]!);
      stop();
      await running;
    }
    expect(urls[0]).toMatch(new RegExp(`^${relayUrl}/in/[A-Za-z0-9_-]{24}$`));
    expect(urls[1]).toBe(urls[0]);
    const state = JSON.parse(await readFile(`${dir}/listen.json`, 'utf8'));
    expect(state.relays[relayUrl].url).toBe(urls[0]);
    expect((await stat(`${dir}/listen.json`)).mode & 0o777).toBe(0o600);
  });

  it('prints an event line with the signature mark and a reply line with status, method, URL and time', async () => {
    const relayUrl = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(relayUrl);
    const { io, lines, waitFor, stop } = recordingIo();
    const running = listen({ forwardTo: `${app.url}/webhooks`, relay: relayUrl, secret: SECRET, channel: channel.channel, token: channel.token, state: '/nonexistent' }, io);
    await waitFor(/^Ready!/);
    const body = eventText(3);
    await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_abc') });
    await fetch(channel.url, { method: 'POST', body, headers: { ...signedHeaders(body, 'dlv_bad'), 'x-service-signature': `sha256=${'0'.repeat(64)}` } });
    await waitFor(/<-- \[401\]/);
    stop();
    await running;
    expect(lines).toContain('23:59:01  --> video.completed [dlv_abc]  sig ✓');
    expect(lines.some((line) => /^23:59:01  <-- \[200\] POST http:\/\/127\.0\.0\.1:\d+\/webhooks \(\d+ ms\)$/.test(line))).toBe(true);
    expect(lines).toContain('23:59:01  --> video.completed [dlv_bad]  sig ✗');
  });

  it('prints JSON lines with --json (no signature without --secret) and forwards only --events names', async () => {
    const relayUrl = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(relayUrl);
    const { io, lines, waitFor, stop } = recordingIo();
    const options = { forwardTo: `${app.url}/echo`, relay: relayUrl, json: true, channel: channel.channel, token: channel.token, state: '/nonexistent' };
    const running = listen({ ...options, events: ['video.failed,video.other'] }, io);
    await waitFor(/"type":"ready"/);
    // --events: the relay sends only the names asked for; the other one is answered 202 and not kept.
    const skipped = await fetch(channel.url, { method: 'POST', body: '{}', headers: { 'x-service-event': 'video.completed' } });
    expect(skipped.status).toBe(202);
    await fetch(channel.url, { method: 'POST', body: '{}', headers: { 'x-service-event': 'video.failed', 'x-service-delivery': 'dlv_j' } });
    await waitFor(/"type":"reply"/);
    stop();
    await running;
    const records = lines.map((line) => JSON.parse(line));
    expect(records.filter((r) => r.type === 'event')).toHaveLength(1);
    expect(records.find((r) => r.type === 'event')).toMatchObject({ eventName: 'video.failed', deliveryId: 'dlv_j', signatureValid: null, seq: 1 });
    expect(records.find((r) => r.type === 'reply')).toMatchObject({ status: 200, seq: 1 });
  });

  it('exits non-zero when the relay refuses the token or does not know the channel', async () => {
    const relayUrl = await startRelay();
    const channel = await createChannel(relayUrl);
    const { io } = recordingIo();
    const wrong = listen({ forwardTo: 'http://127.0.0.1:9/x', relay: relayUrl, channel: channel.channel, token: 'clt_wrong', state: '/nonexistent' }, io);
    await expect(wrong).rejects.toBeInstanceOf(ExitError);
    await expect(wrong).rejects.toMatchObject({ exitCode: 1 });
    const argv = ['node', 'cliphook', 'listen', '--forward-to', 'http://127.0.0.1:9/x', '--relay', relayUrl];
    expect(await main([...argv, '--channel', channel.channel, '--token', 'clt_wrong'])).toBe(1);
    expect(await main([...argv, '--channel', 'unknownchannel', '--token', channel.token])).toBe(1);
    expect(await main(['node', 'cliphook', 'listen', '--forward-to', 'localhost:3000', '--relay', relayUrl])).toBe(2);
    expect(await main(['node', 'cliphook', 'listen', '--relay', relayUrl])).toBe(2);
  });

  it('stays alive and says so while the relay is unreachable (a real process)', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const bin = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));
    const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href; // the cwd is a temp folder
    const dead = 'http://127.0.0.1:9'; // discard port: nothing listens, connections are refused at once
    const child = spawn(process.execPath, ['--import', tsx, bin, 'listen', '--relay', dead, '--forward-to', 'http://127.0.0.1:9/x', '--channel', 'c', '--token', 't'], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1' },
    });
    cleanups.push(async () => child.kill());
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if ((out.match(/connecting to/g) ?? []).length >= 2) resolve(); // so it lived through one backoff wait
      });
      child.once('exit', (code) => reject(new Error(`listen exited with ${code} while retrying:\n${out}${err}`)));
    });
    expect(child.exitCode).toBeNull();
    expect(out).toMatch(/connecting to http:\/\/127\.0\.0\.1:9 \(attempt 1 failed: connect ECONNREFUSED/);
  }, 30_000);

  it('resends a buffered event with --replay', async () => {
    const relayUrl = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const channel = await createChannel(relayUrl);
    const first = recordingIo();
    const options = { forwardTo: `${app.url}/echo`, relay: relayUrl, channel: channel.channel, token: channel.token, state: '/nonexistent' };
    const running = listen(options, first.io);
    await first.waitFor(/^Ready!/);
    await fetch(channel.url, { method: 'POST', body: 'once', headers: { 'x-service-delivery': 'dlv_r' } });
    first.stop();
    await running;
    const second = recordingIo();
    const replaying = listen({ ...options, replay: 'dlv_r' }, second.io);
    await second.waitFor(/--> POST .*\(replay\)/);
    await second.waitFor(/<-- \[200\]/);
    second.stop();
    await replaying;
    expect(app.echoes.map((echo) => echo.body.toString())).toEqual(['once', 'once']);
  });
});

describe('cliphook relay', () => {
  it('serves /healthz until stopped, then saves and stops', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const controller = new AbortController();
    const out: string[] = [];
    let ready!: (line: string) => void;
    const listening = new Promise<string>((resolve) => (ready = resolve));
    const running = relay(
      { port: '0', host: '127.0.0.1', data: `${dir}/relay.json` },
      { out: (line) => (out.push(line), line.startsWith('relay listening') && ready(line)), logger: { info() {}, warn() {} }, signal: controller.signal },
    );
    const url = /on (http:\/\/\S+)/.exec(await listening)![1]!;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    controller.abort();
    await running;
    expect(out.at(-1)).toBe('relay stopped');
    await expect(relay({ port: 'x', host: '127.0.0.1', data: `${dir}/r.json` })).rejects.toMatchObject({ exitCode: 2 });
    await writeFile(`${dir}/broken.json`, '{"version":1,');
    await expect(relay({ port: '0', host: '127.0.0.1', data: `${dir}/broken.json` })).rejects.toMatchObject({ exitCode: 1, message: expect.stringMatching(/^cannot load /) });
  });
});
