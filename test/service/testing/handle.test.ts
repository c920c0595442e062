import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError, SimulatedClock, startService, type StartedService } from '../../../src/service/index.js';

// Issue 22: the test helpers on the startService handle, in process, checked by the contract as the routes are.

let svc: StartedService;
beforeAll(async () => {
  svc = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
});
afterAll(async () => {
  await svc.close();
});

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(() => null, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
};

describe('the test helpers on the startService handle (issue 22)', () => {
  it('accounts, faults, the journal, webhook chaos and reset answer what their routes answer', async () => {
    const made = await svc.accounts.create({ name: 'shop', balance: 250 });
    expect(made).toMatchObject({ id: 2, name: 'shop', balance: 250, api_key: expect.stringMatching(/^sk_/), webhook_secret: expect.stringMatching(/^whsec_/) });
    expect((await svc.accounts.list()).data.map((account) => account.name)).toEqual(['default', 'shop']);

    const rule = await svc.faults.add({ match: { operation: 'getAccount', account: made.id }, times: 1, action: { problem: 'upstream_busy' } });
    expect(rule).toMatchObject({ id: expect.stringMatching(/^flt_/), remaining: 1 });
    const res = await fetch(`${svc.url}/account`, { headers: { authorization: `Bearer ${made.api_key}` } });
    expect(res.status).toBe(503);
    expect((await svc.faults.list({ account: made.id })).data).toEqual([expect.objectContaining({ id: rule.id, applied: 1 })]);
    expect(await svc.faults.remove(rule.id)).toEqual({ id: rule.id, deleted: true });

    const journal = await svc.requests.list({ operation: 'getAccount', limit: 5 });
    expect(journal.data).toEqual([expect.objectContaining({ account: made.id, status: 503, code: 'upstream_busy' })]);
    expect(JSON.stringify(journal)).not.toContain(made.api_key);
    expect((await svc.requests.clear({ account: made.id })).deleted).toBe(1);

    expect(await svc.webhookChaos({ account: made.id, modes: ['webhook_late'] })).toEqual({ object: 'webhook_chaos', account: made.id, modes: ['webhook_late'] });
    expect(await svc.accounts.remove(made.id)).toEqual({ id: made.id, deleted: true });
    expect((await fetch(`${svc.url}/account`, { headers: { authorization: `Bearer ${made.api_key}` } })).status).toBe(401);

    const seeded = await svc.seed({ accounts: [{ name: 'alice' }], clips: [{ name: 'intro', account: 'alice', status: 'done' }] });
    expect(seeded).toMatchObject({ accounts: { alice: { id: expect.any(Number), api_key: expect.stringMatching(/^sk_/) } }, clips: { intro: expect.any(Number) } });
    expect(await svc.reset()).toMatchObject({ reset: true });
    expect((await svc.accounts.list()).data).toHaveLength(1);
  });

  it('bad input is a ServiceError with the route’s code, and nothing is made', async () => {
    expect(await refusal(svc.accounts.create({ balance: -1 }))).toMatchObject({ code: 'invalid_parameter' });
    expect(await refusal(svc.accounts.remove(99))).toMatchObject({ code: 'not_found' });
    expect(await refusal(svc.faults.add({ match: {}, action: { problem: 'nope' } } as never))).toMatchObject({ code: 'invalid_parameter' });
    expect(await refusal(svc.requests.list({ limit: 'many' }))).toMatchObject({ code: 'invalid_parameter' });
    expect(await refusal(svc.webhookChaos({ modes: ['webhook_late'] }))).toMatchObject({ code: 'invalid_parameter', extra: { parameter: 'account' } });
    const seed = await refusal(svc.seed({ accounts: [{ name: 'bob' }], clips: [{ name: 'x', account: 'nobody', status: 'done' }] }));
    expect(seed).toMatchObject({ code: 'invalid_parameter', extra: { pointer: '/clips/0/account' } });
    expect((await svc.accounts.list()).data).toHaveLength(1);
    expect(await refusal(svc.advanceClock({ seconds: 0 }))).toMatchObject({ code: 'invalid_parameter' });
    expect(await refusal(svc.advanceClock({ seconds: 1, account: 42 }))).toMatchObject({ code: 'invalid_parameter', detail: 'No account 42.' });
  });

  it('advanceClock moves every account, or one with account, as the route does', async () => {
    const made = await svc.accounts.create({});
    const before = svc.clock.nowOf(made.id);
    expect(await svc.advanceClock({ seconds: 60, account: made.id })).toMatchObject({ object: 'test_clock', account: made.id, ahead_seconds: 60, advanced_seconds: 60 });
    expect(svc.clock.nowOf(made.id)).toBe(before + 60_000);
    expect(svc.clock.nowOf(1)).toBe(before);
    expect(await svc.advanceClock({ seconds: 1 })).toMatchObject({ account: null, advanced_seconds: 1 });
    expect(svc.clock.nowOf(1)).toBe(before + 1_000);
  });
});
