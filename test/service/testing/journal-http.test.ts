import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22 over HTTP: the request journal, GET and DELETE /test_helpers/requests.

let service: Service;
let client: ServiceClient;
const ADMIN = 'adm_journal_admin_token_0123456789';
const accounts: Array<{ id: number; api_key: string; webhook_secret: string }> = [];
beforeAll(async () => {
  service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true, start: Date.parse('2026-03-01T12:00:00Z') }), adminToken: ADMIN, warn: () => undefined });
  client = await serviceClient(service);
  for (const name of ['a', 'b']) accounts.push((await client.post('/test_helpers/accounts', { name }, { key: ADMIN })).body);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

describe('the request journal (issue 22)', () => {
  it('answers "did my app send the same Idempotency-Key when it retried?": newest first, replayed marked, on the simulated clock', async () => {
    const [a] = accounts;
    const headers = { 'idempotency-key': 'order-42' };
    expect((await client.post('/v1/videos', { prompt: 'a fox' }, { key: a!.api_key, headers })).status).toBe(202);
    const again = await client.post('/v1/videos', { prompt: 'a fox' }, { key: a!.api_key, headers });
    expect(again.headers['idempotent-replayed']).toBe('true');
    const list = await client.get('/test_helpers/requests?operation=createVideo', { key: a!.api_key });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({ at: '2026-03-01T12:00:00.000Z', account: a!.id, key_id: expect.stringMatching(/^key_/), operation: 'createVideo', method: 'POST', path: '/v1/videos', query: {}, idempotency_key: 'order-42', replayed: true, status: 202, code: null, body: { prompt: 'a fox' }, truncated: false }),
      expect.objectContaining({ idempotency_key: 'order-42', replayed: false, status: 202 }),
    ]);
  });

  it('records refusals with their code, and filters by method, path (or template), status (or class), account and limit', async () => {
    const [a, b] = accounts;
    await client.get('/v1/videos/999999', { key: b!.api_key });
    await client.get('/v1/videos?limit=0', { key: b!.api_key });
    const found = await client.get(`/test_helpers/requests?account=${b!.id}&status=4xx&path=/v1/videos/{id}`, { key: ADMIN });
    expect(found.body.data).toEqual([expect.objectContaining({ account: b!.id, operation: 'getVideo', path: '/v1/videos/999999', status: 404, code: 'not_found' })]);
    const query = await client.get('/test_helpers/requests?status=400&method=GET&limit=1', { key: ADMIN });
    expect(query.body.data).toEqual([expect.objectContaining({ account: b!.id, operation: 'listVideos', query: { limit: '0' }, code: 'invalid_parameter' })]);
    expect((await client.get('/test_helpers/requests?path=/v1/videos/999999', { key: ADMIN })).body.data).toHaveLength(1);
    // A failed credential is recorded without an account; helpers are recorded, the journal's own reads are not.
    await client.get('/v1/account', { key: 'sk_wrong_wrong_wrong_wrong_wrong' });
    const all = (await client.get('/test_helpers/requests', { key: ADMIN })).body.data as Array<{ operation: string; account: number | null; code: string | null }>;
    expect(all[0]).toMatchObject({ operation: 'getAccount', account: null, code: 'invalid_api_key' });
    expect(all.some((entry) => entry.operation === 'createTestAccount')).toBe(true);
    expect(all.some((entry) => entry.operation === 'listRequests')).toBe(false);
    void a;
  });

  it('never holds a secret: API keys, webhook secrets and the admin token are redacted wherever they were sent', async () => {
    const [a] = accounts;
    await client.post('/v1/videos', { prompt: `leak ${a!.api_key} ${a!.webhook_secret} ${ADMIN}` }, { key: a!.api_key });
    await client.get(`/v1/videos?token=${ADMIN}`, { key: a!.api_key });
    const text = JSON.stringify((await client.get('/test_helpers/requests?limit=1000', { key: ADMIN })).body);
    for (const secret of [...accounts.flatMap((account) => [account.api_key, account.webhook_secret]), ADMIN, service.first().apiKey]) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
  });

  it('an API key sees and clears only its own account’s entries; the admin reaches every one', async () => {
    const [a, b] = accounts;
    const own = (await client.get('/test_helpers/requests?limit=1000', { key: b!.api_key })).body.data as Array<{ account: number }>;
    expect(own.length).toBeGreaterThan(0);
    expect(new Set(own.map((entry) => entry.account))).toEqual(new Set([b!.id]));
    expect(await client.get(`/test_helpers/requests?account=${a!.id}`, { key: b!.api_key })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'account' } });
    expect(await client.delete('/test_helpers/requests', { key: b!.api_key })).toMatchObject({ status: 200, body: { deleted: own.length } });
    expect((await client.get('/test_helpers/requests', { key: b!.api_key })).body.data).toEqual([]);
    expect((await client.get('/test_helpers/requests', { key: a!.api_key })).body.data.length).toBeGreaterThan(0);
    const cleared = await client.delete('/test_helpers/requests', { key: ADMIN });
    expect(cleared.body.deleted).toBeGreaterThan(0);
    expect((await client.get('/test_helpers/requests', { key: ADMIN })).body.data).toEqual([]);
  });

  it('refuses bad filters with invalid_parameter, and a missing credential with 401', async () => {
    expect(await client.get('/test_helpers/requests?status=6xx', { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.get('/test_helpers/requests?limit=1001', { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.get('/test_helpers/requests', { key: null })).toMatchObject({ status: 401, body: { code: 'invalid_auth_header' } });
  });
});
