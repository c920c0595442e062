import { describe, expect, it } from 'vitest';
import { problem } from '../../../src/protocol/problem.js';
import type { ServiceError } from '../../../src/service/contract/problems.js';
import { FaultRuleRequest } from '../../../src/service/testing/contract/test-helpers.js';
import { faultProblem } from '../../../src/service/testing/fault-answer.js';
import { FaultRules } from '../../../src/service/testing/faults.js';
import { RequestJournal } from '../../../src/service/testing/journal.js';
import { checkFixture, fixtureError } from '../../../src/service/testing/seed.js';
import { checkAnswer } from '../../helpers/openapi-answers.js';

// What these modules make is what the wired routes will answer: each must match the OpenAPI document
// (the same check the whole suite runs on every answer, test/helpers/setup.ts).

const json = (method: string, path: string, status: number, body: unknown) => checkAnswer({ method, path, status, contentType: 'application/json', body });
const problemOf = (error: ServiceError, instance: string) => problem(error.code, { detail: error.detail, instance, ...(error.extra ? { extra: error.extra } : {}) });
const refusalOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error('expected a refusal');
};

describe('the test helpers’ answers against the OpenAPI document', () => {
  it('fault rules: 201 of a rule, 200 of the list and of a deletion, 400 of a rule that cannot be, 404 of an unknown one', () => {
    const faults = new FaultRules({ now: () => Date.parse('2026-03-01T12:00:00Z') });
    const made = faults.add(FaultRuleRequest.parse({ match: { operation: 'getVideo', account: 1 }, times: 2, probability: 0.5, action: { problem: 'upstream_busy', retry_after: 3 } }), { account: null });
    faults.add(FaultRuleRequest.parse({ match: { method: 'POST' }, action: { cut: 'before' } }), { account: null });
    expect(json('POST', '/test_helpers/faults', 201, made)).toBeNull();
    expect(json('GET', '/test_helpers/faults', 200, { data: faults.list({ account: null }) })).toBeNull();
    expect(json('DELETE', '/test_helpers/faults/flt_1', 200, { id: faults.remove('flt_1', { account: null }).id, deleted: true })).toBeNull();
    const refused = refusalOf(() => faults.add(FaultRuleRequest.parse({ match: { operation: 'getVideo' }, action: { problem: 'consent_required' } }), { account: null }));
    expect(checkAnswer({ method: 'POST', path: '/test_helpers/faults', status: 400, contentType: 'application/problem+json', body: problemOf(refused, '/test_helpers/faults') })).toBeNull();
    const unknown = refusalOf(() => faults.remove('flt_9', { account: null }));
    expect(checkAnswer({ method: 'DELETE', path: '/test_helpers/faults/flt_9', status: 404, contentType: 'application/problem+json', body: problemOf(unknown, '/test_helpers/faults/flt_9') })).toBeNull();
  });

  it('a fault’s problem is an answer the matched route documents', () => {
    for (const [method, path, code] of [['GET', '/v1/videos/7', 'upstream_busy'], ['POST', '/v1/videos', 'rate_limit_exceeded'], ['GET', '/v1/account', 'insufficient_credits'], ['POST', '/v1/images', 'concurrency_limit']] as const) {
      const { status, headers, body } = faultProblem(code, { ruleId: 'flt_1', instance: path, origin: 'http://127.0.0.1:8080', balance: 3 });
      expect(checkAnswer({ method, path, status, contentType: headers['content-type']!, body }), `${method} ${path} ${code}`).toBeNull();
    }
  });

  it('the journal: 200 of the list', () => {
    const journal = new RequestJournal();
    journal.record({ at: 0, account: 1, keyId: 'key_a', operation: 'createVideo', method: 'POST', path: '/v1/videos', query: { x: ['1', '2'] }, idempotencyKey: 'k', replayed: true, status: 202, code: null, body: { prompt: 'a'.repeat(5000) } });
    journal.record({ at: 1, account: null, keyId: null, operation: null, method: 'GET', path: '/nowhere', query: {}, idempotencyKey: null, replayed: false, status: 404, code: 'not_found', body: undefined });
    expect(json('GET', '/test_helpers/requests', 200, { data: journal.list() })).toBeNull();
    expect(json('DELETE', '/test_helpers/requests', 200, { deleted: journal.clear() })).toBeNull();
  });

  it('a refused seed fixture: 400 with pointer and errors', () => {
    const check = checkFixture({ clips: [{ name: 'c', account: 'nobody', status: 'done', duration: 99 }] });
    if (check.ok) throw new Error('expected a refusal');
    const body = problemOf(fixtureError(check.errors), '/test_helpers/seed');
    expect(body).toMatchObject({ code: 'invalid_duration', pointer: '/clips/0/duration' });
    expect(checkAnswer({ method: 'POST', path: '/test_helpers/seed', status: 400, contentType: 'application/problem+json', body })).toBeNull();
  });
});
