import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';

// Issue 31 (the walk): a POST /v1/videos with an Idempotency-Key calls nothing it does not need. Each module
// below is replaced by itself with its functions counted; with no fault rule, no Redis and a plain prompt,
// none of them is called (bench/walk.ts measures the same on dist/).
const called: string[] = [];
const counted = <M extends Record<string, unknown>>(name: string, module: M): M =>
  Object.fromEntries(Object.entries(module).map(([key, value]) => [key, typeof value === 'function' && !/^[A-Z]/.test(key) ? (...args: unknown[]) => (called.push(`${name}:${key}`), (value as (...a: unknown[]) => unknown)(...args)) : value])) as M;

vi.mock('../../../src/service/assistant/oauth/paths.js', async (original) => counted('oauth/paths', await original()));
vi.mock('../../../src/service/core/redis/client.js', async (original) => counted('redis/client', await original()));
vi.mock('../../../src/service/core/simulate.js', async (original) => counted('simulate', await original()));
vi.mock('../../../src/service/testing/fault-check.js', async (original) => counted('fault-check', await original()));

// Issue 31 (the walk), measured as bench/walk.ts measures dist/: V8's call counts (precise coverage) over
// exactly one call after a warm-up, read here on src/. Started before the service's modules are imported.
const SRC = new URL('../../../src/', import.meta.url).href;
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

/** The files of src/ (as `service/http/app.ts`) in which some function ran during `once()`. */
async function filesRun(once: () => Promise<void>): Promise<string[]> {
  // What earlier calls left to run (a commit, the journal) runs before the count starts, and after `once` before it ends.
  const settle = async () => {
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  };
  await settle();
  await session.post('Profiler.takePreciseCoverage');
  await once();
  await settle();
  const { result } = await session.post('Profiler.takePreciseCoverage');
  return result
    .filter((script) => script.url.startsWith(SRC) && script.functions.some((fn) => (fn.ranges[0]?.count ?? 0) > 0))
    .map((script) => fileURLToPath(script.url).slice(fileURLToPath(SRC).length))
    .sort();
}

const { SimulatedClock } = await import('../../../src/service/core/clock.js');
const { createServiceApp, startService } = await import('../../../src/service/http/app.js');

const apps: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const app of apps.splice(0).reverse()) await app.close();
});

/** What neither walk runs: the composition root's wiring (the parts got their clock and origin at construction). */
const NEITHER = ['service/service.ts'];

describe('the walk of POST /v1/videos (issue 31)', () => {
  it('with no fault rule, no Redis and a plain prompt, calls nothing of the OAuth paths, Redis, simulate: markers or fault checks', async () => {
    const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    apps.push(app);
    const auth = `Bearer ${app.service.first().apiKey}`;
    called.length = 0;
    const created = await request(app).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'walk-1').send({ prompt: 'a red fox in the snow', duration: 5 });
    expect(created.status).toBe(202);
    expect(called).toEqual([]);
    // What the walk skips still works when asked for: a marker is read, an OAuth path is the OAuth server's.
    const refused = await request(app).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox simulate:generation_paused' });
    expect([refused.status, refused.body.code]).toEqual([503, 'generation_paused']);
    expect(called).toContain('simulate:parseSimulation');
    await request(app).get('/.well-known/oauth-authorization-server');
    expect(called).toContain('oauth/paths:isOAuthPath');
  });

  it('runs no function of the composition root (measured by V8 call counts)', async () => {
    const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    apps.push(app);
    const auth = `Bearer ${app.service.first().apiKey}`;
    let n = 0;
    const post = async () => {
      const created = await request(app).post('/v1/videos').set('authorization', auth).set('idempotency-key', `walk-${++n}`).send({ prompt: 'a red fox in the snow', duration: 5 });
      expect(created.status).toBe(202);
    };
    await post();
    const files = await filesRun(post);
    expect(files).toContain('service/resources/videos/commands.ts');
    expect(files.filter((file) => NEITHER.includes(file))).toEqual([]);
  });
});

describe('the walk of MCP tools/call create_clip (issue 31)', () => {
  it('runs none of the OAuth paths, the pages\' routes, the contract\'s refusals or the composition root', async () => {
    const svc = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    apps.push(svc);
    const client = new Client({ name: 'walk', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${svc.apiKey}` } } }));
    apps.push(client);
    let n = 0;
    const createClip = async () => {
      const result = (await client.callTool({ name: 'create_clip', arguments: { prompt: `a fox ${++n}`, duration: 5, max_credits: 100 } })) as { isError?: boolean; content: unknown };
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
    };
    await createClip();
    // A day on (outside the count: the clock's advance is not the call's): the clip ends, the daily limit starts again.
    await svc.clock.advance(25 * 3_600_000);
    const files = await filesRun(createClip);
    expect(files).toContain('service/resources/videos/commands.ts');
    expect(files.filter((file) => [...NEITHER, 'service/assistant/oauth/paths.ts', 'service/http/extras.ts', 'service/contract/problems.ts'].includes(file))).toEqual([]);
    expect(files.filter((file) => file.startsWith('service/assistant/'))).toEqual(['service/assistant/clip-tools.ts', 'service/assistant/connections.ts', 'service/assistant/endpoint.ts', 'service/assistant/spending.ts', 'service/assistant/tool-runner.ts']);
  });
});
