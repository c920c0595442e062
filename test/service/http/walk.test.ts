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

const { SimulatedClock } = await import('../../../src/service/core/clock.js');
const { createServiceApp } = await import('../../../src/service/http/app.js');

const apps: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

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
});
