import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { openApiDocument } from '../../../../src/service/contract/openapi.js';
import { refusalOf } from '../../../../src/service/contract/problems.js';
import { commonProblems, ROUTES, type RouteSpec } from '../../../../src/service/contract/routes.js';
import { SERVED_TEST_HELPER_ROUTES, TEST_HELPER_ROUTES } from '../../../../src/service/testing/contract/test-helper-routes.js';
import { CreateTestAccountRequest, FaultPath, FaultRuleRequest, JournalQuery, TestAccountPath, WebhookChaosRequest } from '../../../../src/service/testing/contract/test-helpers.js';

// The test helpers of issue 22 in the contract: every path of the issue is a route, tagged, with its
// auth, schemas and codes; every refusal of their schemas has a documented code.

const refusal = (schema: z.ZodType, input: unknown) => {
  const parsed = schema.safeParse(input, { reportInput: true });
  expect(parsed.success, JSON.stringify(input)).toBe(false);
  return refusalOf(schema, parsed.error!.issues, input);
};

describe('the test helper routes (issue 22)', () => {
  // Every helper is defined; ROUTES (the router, the document, the docs) has those served so far.
  const helpers = TEST_HELPER_ROUTES as readonly RouteSpec[];
  const definition = (id: string) => helpers.find((route) => route.operationId === id)!;

  it('serves a subset of the definitions, each in ROUTES once', () => {
    // Issue 31 item 5: the clock's routes are defined with the other test helpers (testing/contract/).
    const served = (ROUTES as readonly RouteSpec[]).filter((route) => route.tag === 'Test helpers');
    expect(served.map((route) => route.operationId)).toEqual(SERVED_TEST_HELPER_ROUTES.map((route) => route.operationId));
    for (const route of served) expect(route).toBe(definition(route.operationId));
  });

  it('has every HTTP path of the issue, with the admin token for service-wide ones and admin-or-key for an account’s own', () => {
    const table = Object.fromEntries(helpers.map((route) => [`${route.method} ${route.path}`, route.auth]));
    expect(table).toMatchObject({
      'POST /test_helpers/accounts': 'admin',
      'GET /test_helpers/accounts': 'admin',
      'DELETE /test_helpers/accounts/{id}': 'admin',
      'POST /test_helpers/reset': 'admin',
      'POST /test_helpers/seed': 'admin',
      'GET /test_helpers/requests': 'admin_or_key',
      'DELETE /test_helpers/requests': 'admin_or_key',
      'POST /test_helpers/faults': 'admin_or_key',
      'GET /test_helpers/faults': 'admin_or_key',
      'DELETE /test_helpers/faults/{id}': 'admin_or_key',
      'POST /test_helpers/webhook_chaos': 'admin_or_key',
    });
  });

  it('answers 401 without a credential and never 402 (the helpers are how a test tops up), through commonProblems', () => {
    for (const route of helpers.filter((each) => each.auth === 'admin' || each.auth === 'admin_or_key')) {
      const codes = commonProblems(route);
      expect(codes, route.operationId).toEqual(expect.arrayContaining(['invalid_auth_header', 'invalid_api_key', 'internal_error']));
      expect(codes, route.operationId).not.toContain('insufficient_credits');
    }
    expect(commonProblems(definition('seedService'))).toContain('invalid_json');
    expect(definition('seedService').pointer).toBe(true);
  });

  it('each served helper is in the OpenAPI document: admin-only under the admin scheme, admin-or-key under either, with its schemas', () => {
    const doc = openApiDocument();
    const schemas = (doc.components as { schemas: Record<string, unknown> }).schemas;
    for (const route of SERVED_TEST_HELPER_ROUTES as readonly RouteSpec[]) {
      const op = doc.paths[route.path]![route.method.toLowerCase()] as { operationId: string; tags: string[]; security?: unknown; responses: Record<string, unknown> };
      expect(op, route.operationId).toMatchObject({ operationId: route.operationId, tags: ['Test helpers'] });
      expect(op.security, route.operationId).toEqual(route.auth === 'admin' ? [{ admin: [] }] : [{ admin: [] }, { bearer: [] }]);
      expect(Object.keys(op.responses), route.operationId).toEqual(expect.arrayContaining(['401', '500']));
      if (route.params) expect(Object.keys(op.responses), route.operationId).toContain('404');
    }
    expect(Object.keys((doc.components as { securitySchemes: object }).securitySchemes)).toEqual(['bearer', 'admin']);
    for (const id of ['TestAccount', 'TestAccountList', 'DeletedTestAccount', 'CreateTestAccountRequest', 'JournalList', 'JournalEntry', 'JournalCleared', 'FaultRule', 'FaultRuleList', 'CreateFaultRuleRequest', 'DeletedFaultRule', 'ResetResponse']) expect(schemas[id], id).toBeDefined();
    const limit = (doc.paths['/test_helpers/requests']!.get!.parameters as Array<{ name: string; schema: unknown }>).find((p) => p.name === 'limit');
    expect(limit!.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 100 });
  });
});

describe('the test helper schemas refuse with documented codes', () => {
  it('accounts: a balance outside 0-100,000,000 or a blank name is invalid_parameter naming the member', () => {
    expect(CreateTestAccountRequest.parse({})).toEqual({});
    expect(refusal(CreateTestAccountRequest, { balance: -1 })).toMatchObject({ code: 'invalid_parameter', extra: { parameter: 'balance' } });
    expect(refusal(CreateTestAccountRequest, { balance: 2.5 }).detail).toBe('balance is a whole number of credits from 0 to 100000000.');
    expect(refusal(CreateTestAccountRequest, { name: '' })).toMatchObject({ code: 'invalid_parameter', detail: 'name is 1-100 characters.' });
    expect(refusal(TestAccountPath, { id: 'x' })).toMatchObject({ code: 'not_found', detail: 'No account x.' });
  });

  it('journal query: a status or a class, an operationId, a method, account and limit as integers', () => {
    expect(JournalQuery.parse({ status: '4xx', method: 'POST', path: '/v1/videos/{id}', account: '2' })).toEqual({ status: '4xx', method: 'POST', path: '/v1/videos/{id}', account: 2, limit: 100 });
    expect(refusal(JournalQuery, { status: '6xx' })).toMatchObject({ code: 'invalid_parameter', detail: 'status is an HTTP status (404) or a class (4xx).' });
    expect(refusal(JournalQuery, { method: 'post' })).toMatchObject({ code: 'invalid_parameter', extra: { allowed_values: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] } });
    expect(refusal(JournalQuery, { limit: '1001' })).toMatchObject({ code: 'invalid_parameter', detail: 'limit is an integer from 1 to 1000.' });
    expect(refusal(JournalQuery, { path: 'v1/videos' })).toMatchObject({ code: 'invalid_parameter', extra: { parameter: 'path' } });
  });

  it('fault rules: operation or method/path, exactly one action, retry_after only with a problem, bounded counts', () => {
    expect(FaultRuleRequest.parse({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy', retry_after: 2 } })).toMatchObject({ action: { problem: 'upstream_busy', retry_after: 2 } });
    expect(refusal(FaultRuleRequest, { match: { operation: 'getVideo', method: 'GET' }, action: { hang: true } })).toMatchObject({ code: 'invalid_parameter', detail: 'match takes operation, or method and/or path: not both.', extra: { parameter: 'match.operation' } });
    expect(refusal(FaultRuleRequest, { match: {}, action: {} })).toMatchObject({ code: 'invalid_parameter', detail: 'action is one of {problem}, {delay_ms}, {cut}, {hang: true}.' });
    expect(refusal(FaultRuleRequest, { match: {}, action: { problem: 'upstream_busy', delay_ms: 5 } }).detail).toBe('action takes one of problem, delay_ms, cut and hang; got problem and delay_ms.');
    expect(refusal(FaultRuleRequest, { match: {}, action: { delay_ms: 5, retry_after: 1 } }).detail).toBe('action.retry_after goes with action.problem.');
    expect(refusal(FaultRuleRequest, { match: {}, action: { delay_ms: 120_001 } })).toMatchObject({ code: 'invalid_parameter', detail: 'action.delay_ms is whole milliseconds from 1 to 120000.' });
    expect(refusal(FaultRuleRequest, { match: {}, action: { cut: 'middle' } })).toMatchObject({ code: 'invalid_parameter', extra: { allowed_values: ['before', 'after'] } });
    expect(refusal(FaultRuleRequest, { match: {}, probability: 0, action: { hang: true } }).detail).toBe('probability is a number above 0 and at most 1.');
    expect(refusal(FaultRuleRequest, { match: {}, times: 0, action: { hang: true } }).detail).toBe('times is a whole number from 1 to 1000000.');
    expect(refusal(FaultRuleRequest, { match: { method: 'TRACE' }, action: { hang: true } })).toMatchObject({ code: 'invalid_parameter', extra: { parameter: 'match.method' } });
    expect(refusal(FaultRuleRequest, { action: { hang: true } })).toMatchObject({ code: 'invalid_parameter', detail: 'match is required.' });
    expect(refusal(FaultPath, { id: '12' })).toMatchObject({ code: 'not_found', detail: 'No fault rule 12.' });
  });

  it('webhook chaos: modes from the list only, [] turns them off', () => {
    expect(WebhookChaosRequest.parse({ modes: [] })).toEqual({ modes: [] });
    expect(WebhookChaosRequest.parse({ account: 3, modes: ['webhook_late', 'webhook_duplicate'] })).toEqual({ account: 3, modes: ['webhook_late', 'webhook_duplicate'] });
    expect(refusal(WebhookChaosRequest, { modes: ['simulate:webhook_late'] })).toMatchObject({ code: 'invalid_parameter', extra: { allowed_values: expect.arrayContaining(['webhook_late', 'webhook_previous_secret']) } });
    expect(refusal(WebhookChaosRequest, {})).toMatchObject({ code: 'invalid_parameter', detail: 'modes is required: an array of modes ([] turns them off).' });
    expect(refusal(WebhookChaosRequest, { modes: ['webhook_late', 'nope'] }).detail).toBe('modes[1]: must be one of webhook_duplicate, webhook_concurrent, webhook_cut, webhook_late, webhook_out_of_order, webhook_previous_secret.');
  });
});
