// The inspector's flags on the commands that start it: listen, serve and dev (issue 14).
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRelayServer } from 'cliphook';
import { dev } from '../../src/cli/commands/dev.js';
import { serve, type ServeCommandOptions } from '../../src/cli/commands/serve.js';
import { inspectorLog } from '../../src/cli/listen-inspector.js';
import { cli } from '../cli/helpers.js';
import { testdir } from '../relay/fixtures.js';
import { palette, recordingApp, runListen } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function relayAndApp() {
  const relay = createRelayServer({ file: false });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const app = await recordingApp();
  cleanups.push(app.close);
  const { dir, cleanup } = await testdir();
  cleanups.push(cleanup);
  return { relayUrl: url, app, state: join(dir, 'listen.json') };
}

/** A port something else holds. */
async function takenPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

describe('cliphook listen --inspect', () => {
  it('is on by default on a free port, printed at start, with its log beside the state file', async () => {
    const { relayUrl, app, state } = await relayAndApp();
    const running = await runListen({ relay: relayUrl, forwardTo: `${app.url}/webhooks`, state });
    cleanups.push(running.stop);
    expect(running.lines[0]).toMatch(/^Inspector: http:\/\/127\.0\.0\.1:\d+\/ \(every webhook, with Replay; --no-inspect to turn it off\)$/);
    const info = await (await fetch(new URL('/api/info', running.inspector!))).json();
    expect(info).toMatchObject({ pages: ['listen'], listen: { forwardTo: `${app.url}/webhooks`, secret: false, channelUrl: expect.stringMatching(/\/in\//) }, service: null });
    expect(inspectorLog(state)).toBe(state.replace(/listen\.json$/, 'listen.events.jsonl'));
    await fetch(info.listen.channelUrl, { method: 'POST', body: '{}' });
    await running.waitFor(/<-- \[200\]/);
    await running.stop();
    expect(existsSync(inspectorLog(state))).toBe(true);
  });

  it('prints an inspector record with --json, and nothing of it with --no-inspect', async () => {
    const { relayUrl, app, state } = await relayAndApp();
    const json = await runListen({ relay: relayUrl, forwardTo: app.url, state, json: true });
    await json.stop();
    expect(json.lines.map((line) => JSON.parse(line)).find((record) => record.type === 'inspector')).toMatchObject({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/) });

    const off = await runListen({ relay: relayUrl, forwardTo: app.url, state, inspect: false });
    expect(off.inspector).toBeNull();
    await off.stop();
    expect(off.lines.some((line) => /Inspector/.test(line))).toBe(false);
    expect(existsSync(inspectorLog(state))).toBe(false);
  });

  it('exits 2 naming --inspect for a bad port, and 1 when the port is taken', async () => {
    const { relayUrl, app, state } = await relayAndApp();
    const bad = await cli('listen', '--relay', relayUrl, '--forward-to', app.url, '--state', state, '--inspect', '99999');
    expect(bad).toMatchObject({ code: 2, stderr: 'cliphook: --inspect must be 0-65535, got 99999.\n' });
    const port = await takenPort();
    const taken = await cli('listen', '--relay', relayUrl, '--forward-to', app.url, '--state', state, '--inspect', String(port));
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(new RegExp(`^cliphook: --inspect: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`));
  });
});

/** Runs a long-running command in process until the test ends; resolves with its first line once it has `lines` lines. */
function running(start: (io: { out(line: string): void; err(line: string): void; signal: AbortSignal }) => Promise<void>, lines = 1) {
  const controller = new AbortController();
  const out: string[] = [];
  let enough!: () => void;
  const ready = new Promise<void>((resolve) => (enough = resolve));
  const done = start({ out: (line) => (out.push(line), out.length >= lines && enough()), err: (line) => out.push(`stderr: ${line}`), signal: controller.signal });
  cleanups.push(async () => {
    controller.abort();
    await done.catch(() => undefined);
  });
  return Promise.race([ready.then(() => out), done.then(() => out)]);
}

describe('cliphook serve --inspect', () => {
  const flags = async (extra: Partial<ServeCommandOptions>): Promise<ServeCommandOptions> => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    return { port: '0', host: '127.0.0.1', data: join(dir, 'service.json'), speed: 'fast', json: true, ...extra };
  };

  it('serves the service page on 127.0.0.1 even when --host binds every address, and says where in the ready line', async () => {
    const [line] = await running(async (io) => serve(await flags({ host: '0.0.0.0', open: true, inspect: '0' }), io));
    const ready = JSON.parse(line!);
    expect(ready.inspector).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const info = await (await fetch(new URL('/api/info', ready.inspector))).json();
    expect(info).toMatchObject({ pages: ['service'], listen: null, service: { origin: ready.origin, schedule: [0, 30_000, 120_000, 600_000, 1_800_000, 7_200_000], maxAttempts: 6 } });
    const deliveries = await (await fetch(new URL('/api/service/deliveries', ready.inspector))).json();
    expect(deliveries).toEqual({ items: [], now: expect.any(Number) });
    expect((await fetch(new URL('/api/service/deliveries?state=lost', ready.inspector))).status).toBe(400);
    const unknown = await fetch(new URL('/api/service/deliveries/dlv_nope/redeliver', ready.inspector), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unknown.status).toBe(404);
    // The service's own port does not serve it.
    expect((await fetch(`${ready.origin}/api/info`)).status).toBe(404);
  });

  it('prints it in the banner, not at all with --no-inspect, and refuses a bad port naming the flag', async () => {
    const text = await running(async (io) => serve(await flags({ json: false, inspect: '0' }), io), 8);
    expect(text.find((line) => line.includes('inspector'))).toMatch(/^ {2}inspector {7}http:\/\/127\.0\.0\.1:\d+\/ \(clips, image jobs, webhook deliveries, Redeliver\)$/);
    const [off] = await running(async (io) => serve(await flags({ inspect: false }), io));
    expect(JSON.parse(off!).inspector).toBeNull();
    await expect(serve(await flags({ inspect: 'x' }), { out: () => undefined, err: () => undefined, signal: AbortSignal.abort() })).rejects.toMatchObject({ exitCode: 2, message: '--inspect must be 0-65535, got x.' });
  });
});

describe('cliphook dev --inspect', () => {
  it('serves both pages: the webhooks its listen received, and the service', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const lines = await running((io) => dev({ port: '0', relayPort: '0', receiverPort: '0', data: dir, speed: 'fast', inspect: '0' }, { ...io, palette }), 5);
    const url = /inspector (http:\/\/127\.0\.0\.1:\d+\/)/.exec(lines.find((line) => line.includes('inspector'))!)![1]!;
    const info = await (await fetch(new URL('/api/info', url))).json();
    expect(info.pages).toEqual(['listen', 'service']);
    expect(info.listen).toMatchObject({ secret: true, forwardTo: expect.stringMatching(/\/webhooks$/) });
    expect((await fetch(new URL('/api/listen/exchanges', url))).status).toBe(200);
    expect((await fetch(new URL('/api/service/clips', url))).status).toBe(200);
  });
});
