import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, type ServiceApp } from '../../../src/service/http/app.js';
import { fingerprint } from '../../../src/service/core/idempotency.js';
import { MAX_JSON_DEPTH } from '../../../src/service/http/pipeline.js';
import { failureOf } from '../../../src/service/runner/failure.js';

const apps: ServiceApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function open(warnings: string[] = []) {
  const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), random: () => 0.5, warn: (message) => void warnings.push(message) });
  apps.push(app);
  return { app, auth: `Bearer ${app.service.first().apiKey}` };
}

/** `{"prompt":"a fox","x":[[[…]]]}` with the array nested so the whole body is `depth` levels deep. */
const nested = (depth: number) => `{"prompt":"a fox","x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;

describe('JSON nesting depth (issue 20 item 10)', () => {
  it('answers a body nested 10,000 levels with 400 invalid_json, also with an Idempotency-Key, and never as a Redis failure', async () => {
    const warnings: string[] = [];
    const { app, auth } = await open(warnings);
    for (const body of ['['.repeat(10_000) + ']'.repeat(10_000), '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), nested(10_000)]) {
      for (const path of ['/v1/videos', '/v1/videos/batch', '/v1/images']) {
        const res = await request(app).post(path).set('authorization', auth).set('idempotency-key', `deep-${path}`).set('content-type', 'application/json').send(body);
        expect(res.status, path).toBe(400);
        expect(res.body).toMatchObject({ code: 'invalid_json', detail: expect.stringContaining(`${MAX_JSON_DEPTH} levels`) });
      }
    }
    expect(warnings.filter((line) => /Redis/.test(line))).toEqual([]);
    expect(app.service.first().balance).toBe(1000);
  });

  it(`takes a body exactly ${MAX_JSON_DEPTH} levels deep, and refuses one level more; brackets inside strings do not count`, async () => {
    const { app, auth } = await open();
    const ok = await request(app).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'at-limit').set('content-type', 'application/json').send(nested(MAX_JSON_DEPTH));
    expect(ok.status).toBe(202);
    const deeper = await request(app).post('/v1/videos').set('authorization', auth).set('content-type', 'application/json').send(nested(MAX_JSON_DEPTH + 1));
    expect(deeper).toMatchObject({ status: 400, body: { code: 'invalid_json' } });
    const text = await request(app).post('/v1/videos').set('authorization', auth).set('content-type', 'application/json').send(JSON.stringify({ prompt: `a fox ${'[{'.repeat(400)} \\" ${'}]'.repeat(400)}` }));
    expect(text.status).toBe(202);
  });

  it('a stack overflow while hashing a body is an internal failure, not 503 upstream_busy (no Redis is involved)', async () => {
    const warnings: string[] = [];
    const reported: Error[] = [];
    const { app } = await open(warnings);
    // Only a body the reader bounded reaches the fingerprint over HTTP; an object handed in by code is not bounded.
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => fingerprint('POST', '/v1/videos', { prompt: 'a fox', x: deep })).toThrow(RangeError);
    // The pipeline answers what is neither a refusal nor a failed write as 500 internal_error, reported, and
    // keeps 503 upstream_busy (the Redis wording) for the idempotency records' own failures.
    const failure = failureOf(new RangeError('Maximum call stack size exceeded'), { warn: app.service.warn, report: (error) => void reported.push(error) });
    expect(failure.code).toBe('internal_error');
    expect(reported.map((error) => error.name)).toEqual(['RangeError']);
    expect(warnings).toEqual([]);
  });
});
