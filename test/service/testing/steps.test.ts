import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import { FaultRules } from '../../../src/service/testing/faults.js';
import { faults, journal } from '../../../src/service/testing/steps.js';
import { callerWith, fakeRun } from '../runner/fixtures.js';

const next = async () => undefined;

describe('the test controls as steps of the runner (issue 31 items 1, 2)', () => {
  it('faults: a problem is thrown, a cut before answers early, a cut after goes on and marks the run', async () => {
    const rules = new FaultRules({ now: () => 0 });
    rules.add({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } }, { account: null });
    rules.add({ match: { operation: 'getVideo' }, times: 1, action: { cut: 'before' } }, { account: null });
    rules.add({ match: { operation: 'getVideo' }, times: 1, action: { cut: 'after' } }, { account: null });
    const step = faults({ rules, site: { origin: 'http://svc.test' } });
    await expect(step(fakeRun('getVideo'), next)).rejects.toMatchObject({ code: 'upstream_busy' });
    const before = fakeRun('getVideo');
    let went = false;
    await step(before, async () => void (went = true));
    expect([before.outcome, went]).toEqual([{ kind: 'drop' }, false]);
    const after = fakeRun('getVideo');
    await step(after, async () => void (went = true));
    expect([after.cutAfter, went]).toEqual([true, true]);
  });

  it('faults: with no rule kept, the step asks the rules nothing and goes on (issue 31: no fault code on the walk)', async () => {
    const asked: string[] = [];
    const rules = { kept: new Map(), decide: (request: { operation: string }) => (asked.push(request.operation), null) };
    const step = faults({ rules, site: { origin: 'http://svc.test' } });
    let went = false;
    await step(fakeRun('createVideo'), async () => void (went = true));
    expect([asked, went]).toEqual([[], true]);
    const real = new FaultRules({ now: () => 0 });
    expect(real.kept.size).toBe(0);
    real.add({ match: { operation: 'getVideo' }, action: { problem: 'upstream_busy' } }, { account: null });
    expect(real.kept.size).toBe(1);
  });

  it('faults: a rule naming a tool acts on the tool\'s calls only', async () => {
    const rules = new FaultRules({ now: () => 0 });
    rules.add({ match: { operation: 'create_clip' }, action: { problem: 'upstream_busy' } }, { account: null });
    const step = faults({ rules, site: { origin: 'http://svc.test' } });
    await step(fakeRun('createVideo'), next);
    const tool = { ...fakeRun('createVideo'), operation: 'create_clip' };
    await expect(step(tool, next)).rejects.toMatchObject({ code: 'upstream_busy' });
  });

  it('journal: records the run once it is answered, with its caller, status and code; never the journal\'s own helpers', async () => {
    const kept: Array<Record<string, unknown>> = [];
    const step = journal({ journal: { record: (entry) => (kept.push(entry as never), entry as never) }, now: () => 42 });
    const run = fakeRun('getVideo', { idempotencyKey: 'k' });
    run.exchange.caller = callerWith(100);
    await step(run, async () => {
      run.exchange.code = 'not_found';
      run.sent.push({ kind: 'problem', body: { status: 404 } as never, headers: {}, error: new ServiceError('not_found', 'Not found') });
    });
    expect(kept).toEqual([expect.objectContaining({ at: 42, account: 1, keyId: 'key_1', operation: 'getVideo', status: 404, code: 'not_found', idempotencyKey: 'k' })]);
    await step(fakeRun('listRequests'), next);
    expect(kept).toHaveLength(1);
  });
});
