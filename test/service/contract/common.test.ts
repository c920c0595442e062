import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryInteger } from '../../../src/service/contract/common.js';
import { parseOrThrow, ServiceError } from '../../../src/service/contract/problems.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';
import { z } from 'zod';

const ADMIN = 'adm_common_admin_token_0123456789abc';
let service: Service;
let client: ServiceClient;
beforeAll(async () => {
  service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true, start: Date.parse('2026-03-01T12:00:00Z') }), adminToken: ADMIN, warn: () => undefined });
  client = await serviceClient(service);
  // An image job, so GET /v1/images/{id} reaches its query.
  expect((await client.post('/v1/images', { description: 'a fox' })).body).toMatchObject({ id: 1 });
});
afterAll(async () => {
  await client.close();
  await service.close();
});

/** The refusal `parseOrThrow` throws for `query`, as code, parameter and sentence. */
function refusal(schema: z.ZodType, query: Record<string, string>) {
  try {
    parseOrThrow(schema, query);
  } catch (error) {
    if (error instanceof ServiceError) return { code: error.code, parameter: error.extra?.parameter, detail: error.detail };
    throw error;
  }
  return null;
}

describe('queryInteger (issue 29 item 11)', () => {
  const query = z.object({ limit: queryInteger('limit', { min: 1, max: 100, fallback: 20 }), before: queryInteger('before', { min: 1 }) });

  it('reads an absent parameter as its default, and refuses an empty one as any bad integer', () => {
    expect(query.parse({})).toEqual({ limit: 20 });
    expect(refusal(query, { limit: '' })).toEqual(refusal(query, { limit: 'x' }));
    expect(refusal(query, { limit: '' })).toEqual({ code: 'invalid_parameter', parameter: 'limit', detail: 'limit is an integer from 1 to 100.' });
    expect(refusal(query, { before: '' })).toEqual(refusal(query, { before: '-1' }));
    expect(refusal(query, { before: '' })).toMatchObject({ code: 'invalid_parameter', parameter: 'before' });
  });
});

describe('empty integer query values over HTTP (issue 29 item 11)', () => {
  const cases = [
    ['/v1/videos?limit=', 'limit'],
    ['/v1/videos?offset=', 'offset'],
    ['/v1/images?before=', 'before'],
    ['/v1/images?limit=', 'limit'],
    ['/v1/assets?offset=', 'offset'],
    ['/v1/images/1?wait=', 'wait'],
    ['/test_helpers/requests?account=', 'account'],
    ['/test_helpers/faults?account=', 'account'],
  ] as const;

  it.each(cases)('GET %s is 400 invalid_parameter naming %s, as a bad integer is', async (path, parameter) => {
    const key = path.startsWith('/test_helpers') ? ADMIN : undefined;
    const empty = await client.get(path, { key });
    expect(empty, JSON.stringify(empty.body)).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter } });
    const bad = await client.get(`${path}x`, { key });
    expect(bad.status).toBe(400);
    expect({ code: empty.body.code, parameter: empty.body.parameter, detail: empty.body.detail }).toEqual({ code: bad.body.code, parameter: bad.body.parameter, detail: bad.body.detail });
  });

  it('DELETE /test_helpers/requests?account= with the admin token clears nothing: 400 naming account', async () => {
    await client.get('/v1/account');
    const before = (await client.get('/test_helpers/requests', { key: ADMIN })).body.data.length as number;
    expect(before).toBeGreaterThan(0);
    const cleared = await client.delete('/test_helpers/requests?account=', { key: ADMIN });
    expect(cleared).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'account' } });
    const after = (await client.get('/test_helpers/requests', { key: ADMIN })).body.data.length as number;
    // The refused DELETE is itself journalled: nothing was taken away.
    expect(after).toBeGreaterThanOrEqual(before);
  });
});
