import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../src/service/contract/openapi.js';
import { ROUTES, type RouteSpec } from '../../../src/service/contract/routes.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { isJsonMediaType } from '../../../src/service/http/pipeline.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 29 item 13: a JSON route takes a body only as application/json (or a +json type). A body sent as
// text/plain (what fetch sends for a string) or with no Content-Type is refused, and nothing is charged.

const ADMIN = 'adm_body_admin_token_0123456789abcdef';
let service: Service;
let clock: SimulatedClock;
let client: ServiceClient;
beforeAll(async () => {
  clock = new SimulatedClock({ frozen: true, start: Date.parse('2026-03-01T12:00:00Z') });
  service = await Service.open({ file: false, clock, adminToken: ADMIN, warn: () => undefined });
  client = await serviceClient(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

const key = () => service.first().apiKey;

/** A POST with raw bytes and exactly the headers given: fetch adds no Content-Type for a Uint8Array. */
async function send(path: string, body: string | null, headers: Record<string, string> = {}, method = 'POST') {
  const res = await fetch(`${client.origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${key()}`, ...headers },
    ...(body === null ? {} : { body: new TextEncoder().encode(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : (JSON.parse(text) as Record<string, any>) };
}

const account = async () => (await client.get('/v1/account')).body as { balance: number };
const clips = async () => ((await client.get('/v1/videos')).body as { total: number }).total;

describe('isJsonMediaType', () => {
  it('takes application/json with parameters and any +json type, in any case; nothing else', () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8', ' application/json ', 'application/merge-patch+json', 'application/vnd.api+json; ext=x']) expect(isJsonMediaType(type), type).toBe(true);
    for (const type of [undefined, '', 'text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/json', 'application/jsonp', 'application/json-seq', 'application/+json', 'json', '*/*']) expect(isJsonMediaType(type), String(type)).toBe(false);
  });
});

describe('a JSON body without a JSON Content-Type (issue 29 item 13)', () => {
  it('refuses a clip sent as text/plain or with no Content-Type with 415 unsupported_media_type, nothing charged or made', async () => {
    const { balance } = await account();
    const made = await clips();
    for (const headers of [{ 'content-type': 'text/plain;charset=UTF-8' }, {}, { 'content-type': 'application/x-www-form-urlencoded' }] as Array<Record<string, string>>) {
      const refused = await send('/v1/videos', JSON.stringify({ prompt: 'a fox' }), headers);
      expect(refused, JSON.stringify(headers)).toMatchObject({ status: 415, body: { code: 'unsupported_media_type', status: 415, instance: '/v1/videos', retryable: false } });
      expect(refused.body!.detail).toContain('application/json');
    }
    // fetch's own default for a string body: text/plain;charset=UTF-8.
    const plain = await fetch(`${client.origin}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key()}` }, body: JSON.stringify({ prompt: 'a fox' }) });
    expect(plain.status).toBe(415);
    expect((await account()).balance).toBe(balance);
    expect(await clips()).toBe(made);
  });

  it('keeps an Idempotency-Key unused by a refused body: the same key then creates the clip once', async () => {
    const body = JSON.stringify({ prompt: 'an owl' });
    expect(await send('/v1/videos', body, { 'content-type': 'text/plain', 'idempotency-key': 'ct-1' })).toMatchObject({ status: 415 });
    const created = await send('/v1/videos', body, { 'content-type': 'application/json', 'idempotency-key': 'ct-1' });
    expect(created.status).toBe(202);
    const replay = await send('/v1/videos', body, { 'content-type': 'application/json; charset=utf-8', 'idempotency-key': 'ct-1' });
    expect(replay).toMatchObject({ status: 202, body: { id: created.body!.id } });
  });

  it('refuses a batch, an image, a top-up and a fault rule the same way', async () => {
    const { balance } = await account();
    expect(await send('/v1/videos/batch', JSON.stringify({ items: [{ prompt: 'a' }] }), { 'content-type': 'text/plain' })).toMatchObject({ status: 415, body: { code: 'unsupported_media_type' } });
    expect(await send('/v1/images', JSON.stringify({ description: 'a fox' }), {})).toMatchObject({ status: 415, body: { code: 'unsupported_media_type' } });
    expect(await send('/settings/top-up', JSON.stringify({ credits: 5 }), { 'content-type': 'text/plain' })).toMatchObject({ status: 415, body: { code: 'unsupported_media_type' } });
    expect(await send('/test_helpers/faults', JSON.stringify({ match: {}, action: { hang: true } }), {})).toMatchObject({ status: 415, body: { code: 'unsupported_media_type' } });
    expect((await client.get('/test_helpers/faults')).body.data).toEqual([]);
    expect((await account()).balance).toBe(balance);
  });

  it('takes application/json with a charset and +json types', async () => {
    expect(await send('/v1/videos', JSON.stringify({ prompt: 'a cat' }), { 'content-type': 'Application/JSON; charset=UTF-8' })).toMatchObject({ status: 202 });
    expect(await send('/v1/videos', JSON.stringify({ prompt: 'a dog' }), { 'content-type': 'application/vnd.cliphook+json' })).toMatchObject({ status: 202 });
  });

  it('asks nothing of a request with no body: a retry, a new key, an account with defaults, a delete', async () => {
    const failed = await client.post('/v1/videos', { prompt: 'a fox simulate:upstream_busy' });
    expect(failed.status).toBe(202);
    await clock.advance(600_000);
    expect((await client.get(`/v1/videos/${failed.body.id}`)).body).toMatchObject({ status: 'error', error_code: 'upstream_busy' });
    expect(await send(`/v1/videos/${failed.body.id}/retry`, null)).toMatchObject({ status: 202 });
    // A body sent to a route that reads none is left unread, whatever its type.
    expect(await send('/settings/keys', 'anything', { 'content-type': 'text/plain' })).toMatchObject({ status: 201 });
    // Every member optional and no body at all: the empty object (POST /test_helpers/accounts), with or without a type.
    expect((await fetch(`${client.origin}/test_helpers/accounts`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } })).status).toBe(201);
    expect((await fetch(`${client.origin}/test_helpers/accounts`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/plain' }, body: '' })).status).toBe(201);
    expect(await send('/v1/videos/1', null, {}, 'DELETE')).not.toMatchObject({ status: 415 });
  });

  it('checks the credential first: a stranger learns nothing of the body', async () => {
    const res = await fetch(`${client.origin}/v1/videos`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(res.status).toBe(401);
  });

  it('is in the OpenAPI document: every operation with a JSON body answers 415 unsupported_media_type, and only those', () => {
    const doc = openApiDocument();
    for (const route of ROUTES as readonly RouteSpec[]) {
      const operation = doc.paths[route.path]![route.method.toLowerCase()] as { requestBody?: { content: Record<string, unknown> }; responses: Record<string, { content: Record<string, { schema: { allOf: Array<{ properties?: { code: { enum: string[] } } }> } }> }> };
      const json = operation.requestBody?.content['application/json'] !== undefined;
      expect(json, route.operationId).toBe(route.body !== undefined);
      const codes = operation.responses['415']?.content['application/problem+json']!.schema.allOf[1]!.properties!.code.enum;
      expect(codes, route.operationId).toEqual(json ? ['unsupported_media_type'] : undefined);
    }
  });
});
