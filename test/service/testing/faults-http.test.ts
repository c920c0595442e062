import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { MAX_FAULT_RULES } from '../../../src/service/testing/faults.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22 over HTTP: fault rules, applied by the pipeline before the handler.

let service: Service;
let client: ServiceClient;
const ADMIN = 'adm_faults_admin_token_0123456789';
let a: { id: number; api_key: string };
let b: { id: number; api_key: string };
beforeAll(async () => {
  service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), adminToken: ADMIN, rateLimitPerMinute: 1e6, warn: () => undefined });
  client = await serviceClient(service);
  a = (await client.post('/test_helpers/accounts', { name: 'a' }, { key: ADMIN })).body;
  b = (await client.post('/test_helpers/accounts', { name: 'b' }, { key: ADMIN })).body;
});
afterAll(async () => {
  await client.close();
  await service.close();
});

const raw = (path: string, init: RequestInit & { key: string }) =>
  fetch(`${client.origin}${path}`, { ...init, headers: { authorization: `Bearer ${init.key}`, 'content-type': 'application/json', ...(init.headers as Record<string, string>) } });

describe('fault rules (issue 22)', () => {
  it('a problem answers exactly what the service would (status, body, Retry-After, rate-limit headers), once, and changes nothing', async () => {
    const clip = (await client.post('/v1/videos', { prompt: 'a fox' }, { key: a.api_key })).body;
    const rule = await client.post('/test_helpers/faults', { match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } }, { key: a.api_key });
    expect(rule).toMatchObject({ status: 201, body: { id: expect.stringMatching(/^flt_/), object: 'fault_rule', match: { operation: 'getVideo', account: a.id }, times: 1, remaining: 1 } });
    const failed = await client.get(`/v1/videos/${clip.id}`, { key: a.api_key });
    expect(failed).toMatchObject({ status: 503, body: { code: 'upstream_busy', retryable: true, retry_after: 5, instance: `/v1/videos/${clip.id}` }, headers: { 'retry-after': '5', 'content-type': 'application/problem+json', 'x-ratelimit-limit': expect.any(String) } });
    expect(await client.get(`/v1/videos/${clip.id}`, { key: a.api_key })).toMatchObject({ status: 200, body: { id: clip.id } });
    const listed = await client.get('/test_helpers/faults', { key: a.api_key });
    expect(listed.body.data).toEqual([expect.objectContaining({ id: rule.body.id, hits: 1, applied: 1, remaining: 0 })]);
    expect(await client.delete(`/test_helpers/faults/${rule.body.id}`, { key: a.api_key })).toMatchObject({ status: 200, body: { id: rule.body.id, deleted: true } });
  });

  it('a 429 with the rule’s Retry-After on a create: nothing charged, nothing made; the journal shows it', async () => {
    const before = (await client.get('/v1/account', { key: a.api_key })).body.balance;
    const total = (await client.get('/v1/videos', { key: a.api_key })).body.total;
    const rule = (await client.post('/test_helpers/faults', { match: { method: 'POST', path: '/v1/videos' }, action: { problem: 'rate_limit_exceeded', retry_after: 2 } }, { key: a.api_key })).body;
    expect(await client.post('/v1/videos', { prompt: 'a fox' }, { key: a.api_key, headers: { 'idempotency-key': 'k-429' } })).toMatchObject({ status: 429, headers: { 'retry-after': '2' }, body: { code: 'rate_limit_exceeded' } });
    // Another account is untouched by a key's rule.
    expect((await client.post('/v1/videos', { prompt: 'a fox' }, { key: b.api_key })).status).toBe(202);
    await client.delete(`/test_helpers/faults/${rule.id}`, { key: a.api_key });
    expect((await client.get('/v1/account', { key: a.api_key })).body.balance).toBe(before);
    expect((await client.get('/v1/videos', { key: a.api_key })).body.total).toBe(total);
    // The key was not taken by the fault: the retry runs.
    expect((await client.post('/v1/videos', { prompt: 'a fox' }, { key: a.api_key, headers: { 'idempotency-key': 'k-429' } })).status).toBe(202);
    const journal = (await client.get('/test_helpers/requests?operation=createVideo&limit=2', { key: a.api_key })).body.data;
    expect(journal.map((entry: { status: number }) => entry.status)).toEqual([202, 429]);
  });

  it('cut before drops the connection and does nothing; cut after does it, drops the answer, and the idempotent retry is replayed', async () => {
    const total = (await client.get('/v1/videos', { key: a.api_key })).body.total;
    const before = (await client.post('/test_helpers/faults', { match: { operation: 'createVideo' }, times: 1, action: { cut: 'before' } }, { key: a.api_key })).body;
    await expect(raw('/v1/videos', { method: 'POST', key: a.api_key, body: JSON.stringify({ prompt: 'a fox' }) })).rejects.toThrow();
    expect((await client.get('/v1/videos', { key: a.api_key })).body.total).toBe(total);
    expect((await client.get('/test_helpers/requests?operation=createVideo&limit=1', { key: a.api_key })).body.data[0]).toMatchObject({ status: 0 });
    await client.delete(`/test_helpers/faults/${before.id}`, { key: a.api_key });

    await client.post('/test_helpers/faults', { match: { operation: 'createVideo' }, times: 1, action: { cut: 'after' } }, { key: a.api_key });
    await expect(raw('/v1/videos', { method: 'POST', key: a.api_key, headers: { 'idempotency-key': 'cut-1' }, body: JSON.stringify({ prompt: 'a fox' }) })).rejects.toThrow();
    expect((await client.get('/v1/videos', { key: a.api_key })).body.total).toBe(total + 1);
    const retried = await client.post('/v1/videos', { prompt: 'a fox' }, { key: a.api_key, headers: { 'idempotency-key': 'cut-1' } });
    expect(retried).toMatchObject({ status: 202, headers: { 'idempotent-replayed': 'true' } });
    expect((await client.get('/v1/videos', { key: a.api_key })).body.total).toBe(total + 1);
  });

  it('delay_ms answers normally, that many real milliseconds late; hang never answers until the client gives up', async () => {
    const delay = (await client.post('/test_helpers/faults', { match: { operation: 'getAccount' }, times: 1, action: { delay_ms: 250 } }, { key: b.api_key })).body;
    const started = Date.now();
    expect((await client.get('/v1/account', { key: b.api_key })).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
    expect(delay.action).toEqual({ delay_ms: 250 });
    await client.post('/test_helpers/faults', { match: { operation: 'getAccount' }, times: 1, action: { hang: true } }, { key: b.api_key });
    await expect(raw('/v1/account', { key: b.api_key, signal: AbortSignal.timeout(300) })).rejects.toThrow();
    expect((await client.get('/v1/account', { key: b.api_key })).status).toBe(200);
  });

  it('who may do what: a key makes and sees its own account’s rules; the admin any; bad rules are 400, unknown ones 404', async () => {
    expect(await client.post('/test_helpers/faults', { match: { operation: 'getVideo', account: a.id }, action: { hang: true } }, { key: b.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'match.account' } });
    expect(await client.post('/test_helpers/faults', { match: { operation: 'getVideo' }, action: { problem: 'consent_required' } }, { key: b.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.post('/test_helpers/faults', { match: { operation: 'listRequests' }, action: { hang: true } }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.post('/test_helpers/faults', { match: { operation: 'getVideo' }, action: {} }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    const admins = (await client.post('/test_helpers/faults', { match: { operation: 'getPricing' }, action: { problem: 'internal_error' } }, { key: ADMIN })).body;
    expect(admins.match.account).toBeNull();
    expect(await client.get('/v1/pricing', { key: null })).toMatchObject({ status: 500, body: { code: 'internal_error' } });
    expect(await client.delete(`/test_helpers/faults/${admins.id}`, { key: b.api_key })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect((await client.get('/test_helpers/faults', { key: b.api_key })).body.data.some((rule: { id: string }) => rule.id === admins.id)).toBe(false);
    expect((await client.get('/test_helpers/faults', { key: ADMIN })).body.data.some((rule: { id: string }) => rule.id === admins.id)).toBe(true);
    expect(await client.delete(`/test_helpers/faults/${admins.id}`, { key: ADMIN })).toMatchObject({ status: 200 });
    expect(await client.delete('/test_helpers/faults/flt_999', { key: ADMIN })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await client.get('/test_helpers/faults', { key: null })).toMatchObject({ status: 401 });
  });

  it('an account holds at most MAX_FAULT_RULES rules: one more is a 400 problem, and nothing is kept (issue 29 item 6)', async () => {
    const c = (await client.post('/test_helpers/accounts', { name: 'c' }, { key: ADMIN })).body;
    const body = { match: { operation: 'getAccount' }, action: { delay_ms: 1 } };
    for (let i = 0; i < MAX_FAULT_RULES; i++) expect((await client.post('/test_helpers/faults', body, { key: c.api_key })).status).toBe(201);
    const refused = await client.post('/test_helpers/faults', body, { key: c.api_key });
    expect(refused).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'match.account', limit: MAX_FAULT_RULES }, headers: { 'content-type': 'application/problem+json' } });
    expect(refused.body.detail).toMatch(/^Account \d+ holds 100 fault rules, the most it may/);
    expect(await client.post('/test_helpers/faults', { ...body, match: { ...body.match, account: c.id } }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect((await client.get('/test_helpers/faults', { key: c.api_key })).body.data).toHaveLength(MAX_FAULT_RULES);
  });
});
