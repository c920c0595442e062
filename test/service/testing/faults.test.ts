import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import { FaultRule, FaultRuleRequest, type FaultRuleInput } from '../../../src/service/testing/contract/test-helpers.js';
import { answerableCodes, checkFaultRule, FaultRules, faultableRoutes, MAX_FAULT_RULES, seededRandom } from '../../../src/service/testing/faults.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const ADMIN = { account: null };
/** A rule body as the contract parses it. */
const rule = (input: unknown): FaultRuleInput => FaultRuleRequest.parse(input);

/** The ServiceError a call throws. */
function refusal(run: () => unknown): ServiceError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    return error as ServiceError;
  }
  throw new Error('expected a refusal');
}

describe('checkFaultRule: what a rule may match and answer (issue 22)', () => {
  it('selects routes by operation, by method and/or path template, never the test helpers', () => {
    expect(checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { hang: true } })).map((route) => route.operationId)).toEqual(['getVideo']);
    expect(checkFaultRule(rule({ match: { path: '/v1/videos/{id}' }, action: { hang: true } })).map((route) => route.operationId)).toEqual(['getVideo', 'deleteVideo']);
    expect(checkFaultRule(rule({ match: { method: 'POST', path: '/v1/videos' }, action: { hang: true } })).map((route) => route.operationId)).toEqual(['createVideo']);
    const everyGet = checkFaultRule(rule({ match: { method: 'GET' }, action: { delay_ms: 10 } })).map((route) => route.operationId);
    expect(everyGet).toEqual(expect.arrayContaining(['getVideo', 'listImages', 'getPricing', 'getMedia']));
    expect(everyGet).not.toContain('listRequests');
    expect(everyGet).not.toContain('getClock');
    expect(faultableRoutes().some((route) => route.tag === 'Test helpers')).toBe(false);
  });

  it('refuses an unknown or test-helper operation, an unknown template and a method the path does not take, listing what is allowed', () => {
    const helper = refusal(() => checkFaultRule(rule({ match: { operation: 'createFaultRule' }, action: { hang: true } })));
    expect(helper).toMatchObject({ code: 'invalid_parameter', detail: 'No operation createFaultRule to fault: it is an operationId of the document, not a test helper, or an assistant tool.', extra: { parameter: 'match.operation' } });
    expect(helper.extra!.allowed_values).toEqual(expect.arrayContaining(['createVideo', 'getVideo']));
    expect(helper.extra!.allowed_values).not.toContain('createFaultRule');
    expect(refusal(() => checkFaultRule(rule({ match: { path: '/v1/videos/7' }, action: { hang: true } })))).toMatchObject({ code: 'invalid_parameter', extra: { parameter: 'match.path' } });
    expect(refusal(() => checkFaultRule(rule({ match: { method: 'PUT', path: '/v1/videos/{id}' }, action: { hang: true } })))).toMatchObject({
      detail: '/v1/videos/{id} does not take PUT; it takes GET, DELETE.', extra: { parameter: 'match.method', allowed_values: ['GET', 'DELETE'] },
    });
  });

  it('refuses a problem code that a matched route never answers, naming the route and the codes all of them can', () => {
    expect(checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { problem: 'upstream_busy' } }))).toHaveLength(1);
    const consent = refusal(() => checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { problem: 'consent_required' } })));
    expect(consent.detail).toMatch(/^GET \/v1\/videos\/\{id\} \(getVideo\) never answers consent_required; the matched route can answer /);
    expect(consent.extra).toMatchObject({ parameter: 'action.problem' });
    expect(consent.extra!.allowed_values).toEqual([...answerableCodes(checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { hang: true } }))[0]!)].sort());
    expect(refusal(() => checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { problem: 'teapot' } }))).detail).toMatch(/^teapot is not a code of spec section 7;/);
    // The receiver's codes are in the table but no route of the service answers them.
    expect(refusal(() => checkFaultRule(rule({ match: { operation: 'createVideo' }, action: { problem: 'stale_delivery' } }))).code).toBe('invalid_parameter');
    // Every route answers internal_error; GET /v1/pricing (no key) never answers upstream_busy.
    expect(checkFaultRule(rule({ match: {}, action: { problem: 'internal_error' } })).length).toBe(faultableRoutes().length);
    const everywhere = refusal(() => checkFaultRule(rule({ match: {}, action: { problem: 'upstream_busy' } })));
    expect(everywhere.detail).toMatch(/never answers upstream_busy; the matched routes can answer internal_error\.$/);
    expect(everywhere.extra!.allowed_values).toEqual(['internal_error']);
  });

  it('takes retry_after only with a retryable code (spec 7)', () => {
    expect(checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { problem: 'rate_limit_exceeded', retry_after: 2 } }))).toHaveLength(1);
    expect(refusal(() => checkFaultRule(rule({ match: { operation: 'getVideo' }, action: { problem: 'not_found', retry_after: 2 } })))).toMatchObject({
      detail: 'retry_after goes with a retryable code; not_found is not retryable (spec 7).', extra: { parameter: 'action.retry_after' },
    });
  });
});

describe('FaultRules: rules in order, with their counts', () => {
  const make = (options: { accountExists?: (id: number) => boolean } = {}) => new FaultRules({ now: () => T0, ...options });

  it('makes rules with ids and defaults, as the API answers them', () => {
    const faults = make();
    const made = faults.add(rule({ match: { operation: 'getVideo' }, times: 2, action: { problem: 'upstream_busy' } }), ADMIN);
    expect(made).toEqual({
      id: 'flt_1', object: 'fault_rule', match: { operation: 'getVideo', method: null, path: null, account: null }, times: 2, after: 0, probability: null, seed: 1,
      action: { problem: 'upstream_busy' }, hits: 0, applied: 0, remaining: 2, created_at: '2026-03-01T12:00:00.000Z',
    });
    expect(faults.add(rule({ match: { method: 'POST' }, seed: 9, probability: 0.5, action: { cut: 'after' } }), ADMIN)).toMatchObject({ id: 'flt_2', seed: 9, probability: 0.5, action: { cut: 'after' }, remaining: null });
    faults.add(rule({ match: { path: '/v1/videos/{id}', account: 4 }, after: 3, action: { problem: 'rate_limit_exceeded', retry_after: 7 } }), ADMIN);
    faults.add(rule({ match: {}, action: { delay_ms: 250 } }), ADMIN);
    faults.add(rule({ match: {}, action: { hang: true } }), ADMIN);
    // Each as the contract (and so the OpenAPI document) describes it, with no member it does not.
    for (const view of faults.list(ADMIN)) expect(FaultRule.parse(view), view.id).toEqual(view);
  });

  it('fails a polling loop once: the first GET is 503, the next ones pass, and the rule reports it is used up', () => {
    const faults = make();
    faults.add(rule({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } }), ADMIN);
    expect(faults.decide({ operation: 'listVideos', account: 1 })).toBeNull();
    const first = faults.decide({ operation: 'getVideo', account: 1 });
    expect(first).toMatchObject({ action: { kind: 'problem', code: 'upstream_busy', retryAfter: null }, rule: { id: 'flt_1', hits: 1, applied: 1, remaining: 0 }, route: { operationId: 'getVideo' }, itemCodes: [] });
    expect(faults.decide({ operation: 'getVideo', account: 1 })).toBeNull();
    expect(faults.list(ADMIN)[0]).toMatchObject({ hits: 1, applied: 1, remaining: 0 });
  });

  it('lets `after` requests through first, and the first rule that acts wins; earlier rules count what they saw', () => {
    const faults = make();
    faults.add(rule({ match: { path: '/v1/videos/{id}' }, after: 2, action: { problem: 'not_found' } }), ADMIN);
    faults.add(rule({ match: { method: 'GET' }, action: { delay_ms: 50 } }), ADMIN);
    const kinds = Array.from({ length: 4 }, () => faults.decide({ operation: 'getVideo', account: 1 })?.action.kind);
    expect(kinds).toEqual(['delay', 'delay', 'problem', 'problem']);
    expect(faults.list(ADMIN).map((each) => [each.hits, each.applied])).toEqual([[4, 2], [2, 2]]);
  });

  it('matches an account’s requests only, and never a test helper route, even for a rule on every GET', () => {
    const faults = make();
    faults.add(rule({ match: { method: 'GET', account: 2 }, action: { hang: true } }), ADMIN);
    expect(faults.decide({ operation: 'getVideo', account: 1 })).toBeNull();
    expect(faults.decide({ operation: 'getVideo', account: 2 })?.action).toEqual({ kind: 'hang' });
    expect(faults.decide({ operation: 'listRequests', account: 2 })).toBeNull();
    expect(faults.decide({ operation: 'noSuchOperation', account: 2 })).toBeNull();
  });

  it('draws a rule’s probability from its seed: the same seed fails the same requests on every run', () => {
    const run = (seed: number) => {
      const faults = make();
      faults.add(rule({ match: { operation: 'getVideo' }, probability: 0.3, seed, action: { problem: 'upstream_busy' } }), ADMIN);
      return Array.from({ length: 2000 }, () => (faults.decide({ operation: 'getVideo', account: 1 }) ? 1 : 0));
    };
    const a = run(7);
    expect(run(7)).toEqual(a);
    expect(run(8)).not.toEqual(a);
    const share = a.reduce((sum: number, hit) => sum + hit, 0) / a.length;
    expect(share).toBeGreaterThan(0.26);
    expect(share).toBeLessThan(0.34);
    const draw = seededRandom(42);
    expect([draw(), draw()]).toEqual([0.6011037519201636, 0.44829055899754167]);
  });

  it('keeps an API key’s rules to its own account: made, listed and deleted', () => {
    const faults = make({ accountExists: (id) => id <= 3 });
    expect(faults.add(rule({ match: { operation: 'getVideo' }, action: { hang: true } }), { account: 2 }).match.account).toBe(2);
    faults.add(rule({ match: { operation: 'getVideo', account: 3 }, action: { hang: true } }), ADMIN);
    faults.add(rule({ match: { operation: 'listVideos' }, action: { hang: true } }), ADMIN);
    expect(refusal(() => faults.add(rule({ match: { operation: 'getVideo', account: 3 }, action: { hang: true } }), { account: 2 }))).toMatchObject({
      code: 'invalid_parameter', detail: 'An API key makes rules for its own account (2) only; use the admin token for account 3.',
    });
    expect(refusal(() => faults.add(rule({ match: { operation: 'getVideo', account: 9 }, action: { hang: true } }), ADMIN))).toMatchObject({ code: 'invalid_parameter', detail: 'No account 9.' });
    expect(faults.list({ account: 2 }).map((each) => each.id)).toEqual(['flt_1']);
    expect(faults.list(ADMIN).map((each) => each.id)).toEqual(['flt_1', 'flt_2', 'flt_3']);
    expect(faults.list(ADMIN, { account: 3 }).map((each) => each.id)).toEqual(['flt_2']);
    expect(refusal(() => faults.remove('flt_2', { account: 2 }))).toMatchObject({ code: 'not_found', detail: 'No fault rule flt_2.' });
    expect(faults.remove('flt_1', { account: 2 }).id).toBe('flt_1');
    expect(refusal(() => faults.remove('flt_1', ADMIN)).code).toBe('not_found');
  });

  it('clears one account’s rules, or all (ids then start again)', () => {
    const faults = make();
    faults.add(rule({ match: { operation: 'getVideo', account: 1 }, action: { hang: true } }), ADMIN);
    faults.add(rule({ match: { operation: 'getVideo', account: 2 }, action: { hang: true } }), ADMIN);
    expect(faults.clear({ account: 1 })).toBe(1);
    expect(faults.list(ADMIN).map((each) => each.match.account)).toEqual([2]);
    expect(faults.clear()).toBe(1);
    expect(faults.add(rule({ match: {}, action: { hang: true } }), ADMIN).id).toBe('flt_1');
  });

  it('names the batch route’s own codes as item codes, so its problem carries item_index', () => {
    const faults = make();
    faults.add(rule({ match: { operation: 'createVideoBatch' }, action: { problem: 'consent_required' } }), ADMIN);
    expect(faults.decide({ operation: 'createVideoBatch', account: 1 })!.itemCodes).toContain('consent_required');
  });

  it('holds at most MAX_FAULT_RULES rules per account and as many service-wide, refusing the next with 400 (issue 29 item 6)', () => {
    expect(MAX_FAULT_RULES).toBe(100);
    const faults = make();
    const hang = (match: Record<string, unknown>) => rule({ match: { operation: 'getVideo', ...match }, action: { hang: true } });
    for (let i = 0; i < MAX_FAULT_RULES; i++) faults.add(hang({}), { account: 2 });
    // The admin's rules for account 2 count against account 2's room too.
    const full = refusal(() => faults.add(hang({ account: 2 }), ADMIN));
    expect(full).toMatchObject({ code: 'invalid_parameter', extra: { parameter: 'match.account', limit: MAX_FAULT_RULES } });
    expect(full.detail).toBe('Account 2 holds 100 fault rules, the most it may: delete one (DELETE /test_helpers/faults/{id}) or reset first.');
    expect(refusal(() => faults.add(hang({}), { account: 2 })).code).toBe('invalid_parameter');
    // Another account, and the service-wide set, have their own room.
    expect(faults.add(hang({}), { account: 3 }).match.account).toBe(3);
    for (let i = 0; i < MAX_FAULT_RULES; i++) faults.add(hang({}), ADMIN);
    expect(refusal(() => faults.add(hang({}), ADMIN)).detail).toBe('The service-wide set holds 100 fault rules, the most it may: delete one (DELETE /test_helpers/faults/{id}) or reset first.');
    expect(faults.list({ account: 2 })).toHaveLength(MAX_FAULT_RULES);
    // Deleting one makes room again; nothing refused was kept.
    faults.remove(faults.list({ account: 2 })[0]!.id, { account: 2 });
    expect(faults.add(hang({}), { account: 2 }).match.account).toBe(2);
    expect(faults.list(ADMIN)).toHaveLength(2 * MAX_FAULT_RULES + 1);
    const small = new FaultRules({ now: () => T0, maxRules: 1 });
    small.add(hang({}), { account: 1 });
    expect(refusal(() => small.add(hang({}), { account: 1 })).extra).toMatchObject({ limit: 1 });
    expect(() => new FaultRules({ now: () => T0, maxRules: 0 })).toThrow('Expected `maxRules` to be a whole number >= 1, got 0.');
  });

  it('tries a request against its own account’s rules and the service-wide ones only, in the order they were made (issue 29 item 6)', () => {
    const faults = make();
    const add = (match: Record<string, unknown>, caller: { account: number | null }, problem = 'upstream_busy') => faults.add(rule({ match: { operation: 'getVideo', ...match }, times: 1, action: { problem } }), caller).id;
    const first = add({}, ADMIN);
    for (let account = 10; account < 60; account++) add({}, { account });
    const own = add({}, { account: 7 }, 'internal_error');
    const second = add({}, ADMIN);
    expect(faults.decide({ operation: 'getVideo', account: 7 })!.rule.id).toBe(first);
    expect(faults.decide({ operation: 'getVideo', account: 7 })!.rule.id).toBe(own);
    expect(faults.decide({ operation: 'getVideo', account: 7 })!.rule.id).toBe(second);
    expect(faults.decide({ operation: 'getVideo', account: 7 })).toBeNull();
    // Other accounts' rules saw none of it.
    expect(faults.list(ADMIN, { account: 10 })[0]).toMatchObject({ hits: 0, applied: 0 });
  });

  it('refuses a rule it cannot check, and a missing clock', () => {
    expect(() => make().add(rule({ match: { operation: 'nope' }, action: { hang: true } }), ADMIN)).toThrow(ServiceError);
    expect(() => new FaultRules({ now: undefined as never })).toThrow('Expected `now` to be a function that returns the time in milliseconds.');
  });
});
