import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startServe, tempDir } from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('cliphook serve: the assistant endpoint', () => {
  it('serves /mcp by default and turns it off with --no-assistant', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const on = await startServe(['--data', join(dir, 'on.json'), '--no-inspect']);
    cleanups.push(on.stop);
    expect(await (await fetch(`${on.ready.origin}/mcp/status`)).json()).toMatchObject({ enabled: true, url: `${on.ready.origin}/mcp` });
    expect(on.ready.mcp).toBe(`${on.ready.origin}/mcp`);
    const off = await startServe(['--data', join(dir, 'off.json'), '--no-inspect', '--no-assistant']);
    cleanups.push(off.stop);
    expect(await (await fetch(`${off.ready.origin}/mcp/status`)).json()).toMatchObject({ enabled: false, url: null });
    expect(off.ready.mcp).toBeNull();
    const res = await fetch(`${off.ready.origin}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${off.ready.apiKey}` }, body: '{}' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
  });
});
