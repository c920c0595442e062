// The inspector's flags on the commands that start it: listen (issue 14).
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRelayServer } from 'cliphook';
import { inspectorLog } from '../../src/cli/listen-inspector.js';
import { cli } from '../cli/helpers.js';
import { testdir } from '../relay/fixtures.js';
import { recordingApp, runListen } from './fixtures.js';

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
