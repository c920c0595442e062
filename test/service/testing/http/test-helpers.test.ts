import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ServiceError, SimulatedClock, startService, type StartedService } from '../../../../src/service/index.js';
// The service under the handle (its store), which the package does not publish (issue 31 item 5).
import { startService as startInternal } from '../../../../src/service/http/app.js';

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

describe('the helpers run their route’s chain (issue 31 item 1)', () => {
  it('each call is journalled as the admin’s request of its route, with its status and refusal code', async () => {
    await svc.requests.clear();
    const made = await svc.accounts.create({ name: 'journalled' });
    await refusal(svc.accounts.remove(999));
    await svc.advanceClock({ seconds: 5, account: made.id });
    const { data } = await svc.requests.list();
    expect(data.map(({ operation, method, path, status, code, account }) => ({ operation, method, path, status, code, account }))).toEqual([
      { operation: 'advanceClock', method: 'POST', path: '/test_helpers/clock/advance', status: 200, code: null, account: null },
      { operation: 'deleteTestAccount', method: 'DELETE', path: '/test_helpers/accounts/999', status: 404, code: 'not_found', account: null },
      { operation: 'createTestAccount', method: 'POST', path: '/test_helpers/accounts', status: 201, code: null, account: null },
    ]);
    // The body as sent, as the route journals it; the admin's lane (issue 29 follow-up item 4).
    expect(data[2]!.body).toEqual({ name: 'journalled' });
    expect((await svc.requests.list({ operation: 'listRequests' })).data).toEqual([]);
  });

  it('a fault rule never selects a helper: a rule for every POST leaves svc.accounts.create working', async () => {
    const rule = await svc.faults.add({ match: { method: 'POST' }, action: { problem: 'upstream_busy' } });
    try {
      expect(await svc.accounts.create({ name: 'unfaulted' })).toMatchObject({ name: 'unfaulted' });
      expect((await svc.faults.list()).data.find((listed) => listed.id === rule.id)).toMatchObject({ applied: 0 });
    } finally {
      await svc.faults.remove(rule.id);
    }
  });

  it('a write that fails is a 503 upstream_busy ServiceError, and nothing is made (one unit of work)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-helpers-'));
    const onFile = await startInternal({ file: join(dir, 'service.json'), clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    try {
      const commit = vi.spyOn(onFile.service.store, 'commit').mockRejectedValueOnce(new Error('disk full'));
      expect(await refusal(onFile.accounts.create({ name: 'lost' }))).toMatchObject({ code: 'upstream_busy', retryAfter: 5 });
      commit.mockRestore();
      expect((await onFile.accounts.list()).data.map((account) => account.name)).toEqual(['default']);
    } finally {
      await onFile.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a helper\'s refusal is the runner\'s own error, not one rebuilt from its problem (issue 31 item 4)', () => {
  it('throws the very ServiceError the command threw (its stack names the command, not the helper)', async () => {
    const internal = await startInternal({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    try {
      const thrown = new ServiceError('not_found', 'No such account list today.', { extra: { item_index: 2 } });
      internal.service.testAccounts.list = () => {
        throw thrown;
      };
      const error = await refusal(internal.accounts.list());
      expect(error).toBe(thrown);
      expect(error.extra).toEqual({ item_index: 2 });
    } finally {
      await internal.close();
    }
  });
});
