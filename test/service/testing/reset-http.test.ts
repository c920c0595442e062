import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22 over HTTP: POST /test_helpers/reset, on the service's own (running) clock.

let service: Service;
let client: ServiceClient;
const ADMIN = 'adm_reset_admin_token_0123456789';
beforeAll(async () => {
  service = await Service.open({ file: false, adminToken: ADMIN, balance: 400, warn: () => undefined });
  client = await serviceClient(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

describe('reset (issue 22)', () => {
  it('brings back a fresh start with the same options: the first account with its key, secret and starting balance, nothing else', async () => {
    const { apiKey, webhookSecret } = service.first();
    const other = (await client.post('/test_helpers/accounts', { name: 'other' }, { key: ADMIN })).body;
    expect((await client.post('/v1/videos', { prompt: 'a fox' }, { key: apiKey, headers: { 'idempotency-key': 'same' } })).status).toBe(202);
    await client.post('/test_helpers/faults', { match: { operation: 'getPricing' }, action: { problem: 'internal_error' } }, { key: ADMIN });
    await client.post('/test_helpers/clock/advance', { seconds: 86_400 });
    await client.post('/test_helpers/clock/advance', { seconds: 3_600 }, { key: ADMIN });
    expect(service.clock.leadOf(1)).toBe(86_400_000);
    expect(service.clock.ahead).toBeGreaterThan(3_500_000);

    const reset = await client.post('/test_helpers/reset', undefined, { key: ADMIN });
    expect(reset).toMatchObject({ status: 200, body: { reset: true, now: expect.any(String) } });
    expect(Math.abs(Date.parse(reset.body.now) - Date.now())).toBeLessThan(60_000);
    expect(Math.abs(service.clock.ahead)).toBeLessThan(1000);
    expect(service.clock.leadOf(1)).toBe(0);

    expect(service.first()).toMatchObject({ accountId: 1, apiKey, webhookSecret, balance: 400 });
    expect((await client.get('/test_helpers/accounts', { key: ADMIN })).body.data).toEqual([expect.objectContaining({ id: 1, name: 'default', balance: 400, default: true })]);
    expect(await client.get('/v1/account', { key: other.api_key })).toMatchObject({ status: 401 });
    expect((await client.get('/v1/videos', { key: apiKey })).body).toMatchObject({ total: 0 });
    expect((await client.get('/test_helpers/faults', { key: ADMIN })).body.data).toEqual([]);
    expect((await client.get('/v1/pricing', { key: null })).status).toBe(200);
    // The journal starts again with the reset itself (recorded once it was answered).
    expect((await client.get('/test_helpers/requests', { key: ADMIN })).body.data.map((entry: { operation: string }) => entry.operation)).toEqual(['getPricing', 'listFaultRules', 'listVideos', 'getAccount', 'listTestAccounts', 'resetService']);
    // Idempotency records are gone: the same key makes a new clip; ids start again at 1.
    const again = await client.post('/v1/videos', { prompt: 'a fox' }, { key: apiKey, headers: { 'idempotency-key': 'same' } });
    expect(again).toMatchObject({ status: 202, body: { id: 1 } });
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect((await client.post('/test_helpers/accounts', {}, { key: ADMIN })).body.id).toBe(2);
  });

  it('takes the admin token only', async () => {
    expect(await client.post('/test_helpers/reset', undefined, { key: service.first().apiKey })).toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
  });
});
