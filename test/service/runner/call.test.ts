import { describe, expect, it } from 'vitest';
import { problem } from '../../../src/protocol/problem.js';
import { ServiceError } from '../../../src/service/contract/problems.js';
import type { Caller } from '../../../src/service/core/gate.js';
import { CallRequest, operationRunner } from '../../../src/service/runner/call.js';
import { named, type Outcome } from '../../../src/service/runner/chain.js';
import type { GateRun } from '../../../src/service/runner/steps.js';
import { routeOf } from './fixtures.js';

// Issue 31 item 1: the runner's adapter for the pages and startService()'s helpers.

describe('CallRequest: a call in process as the steps read a request', () => {
  it('fills the route’s path with its params (as the journal shows it) and reads path and query as strings', () => {
    const request = new CallRequest(routeOf('deleteTestAccount'), { authorization: 'Bearer adm_x', params: { id: 7 }, query: { account: 2, absent: undefined } });
    expect(request).toMatchObject({ method: 'DELETE', path: '/test_helpers/accounts/7', authorization: 'Bearer adm_x', address: undefined, idempotencyKey: undefined, params: { id: '7' }, query: { account: '2' } });
    expect(new CallRequest(routeOf('deleteFaultRule'), { params: { id: 'a/b' } }).path).toBe('/test_helpers/faults/a%2Fb');
  });

  it('gives the body as the wire would carry it, and a body JSON cannot hold as invalid_json', async () => {
    const route = routeOf('createTestAccount');
    expect(await new CallRequest(route, {}).json()).toEqual({ ok: true, value: undefined });
    expect(await new CallRequest(route, { body: { name: 'a', gone: undefined, at: new Date(0) } }).json()).toEqual({ ok: true, value: { name: 'a', at: '1970-01-01T00:00:00.000Z' } });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const refused = await new CallRequest(route, { body: cyclic }).json();
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error).toMatchObject({ code: 'invalid_json' });
  });

  it('answers the status of its outcome (0 before one, and for no answer)', () => {
    const request = new CallRequest(routeOf('listTestAccounts'), {});
    expect(request.status()).toBe(0);
    request.settle({ kind: 'json', status: 201, body: {}, headers: {} });
    expect(request.status()).toBe(201);
    request.settle({ kind: 'problem', body: problem('not_found'), headers: {}, error: new ServiceError('not_found', 'Not found') });
    expect(request.status()).toBe(404);
    request.settle({ kind: 'drop' });
    expect(request.status()).toBe(0);
  });
});

describe('operationRunner', () => {
  it('runs the steps on a run of the route with the command, a caller given, and sends the outcome', async () => {
    const caller = { account: { id: 4 }, key: { id: 'key_4' } } as unknown as Caller;
    const seen: Array<{ operation: string; caller: Caller; exchangeCaller: Caller | null }> = [];
    const steps = [
      named<GateRun>('answer', async (run, next) => {
        await next();
        await run.respond({ kind: 'json', status: 200, body: run.value, headers: {} });
      }),
      named<GateRun>('command', async (run, next) => {
        seen.push({ operation: run.operation, caller: run.caller, exchangeCaller: run.exchange.caller });
        run.value = await run.command({ caller: run.caller, params: {}, query: {}, body: { n: 2 } });
        return next();
      }),
    ];
    const sent: Outcome[] = [];
    await operationRunner(steps)(routeOf('uploadAsset'), ({ caller: who, body }) => ({ account: who.account.id, doubled: body.n * 2 }), new CallRequest(routeOf('uploadAsset'), {}), (outcome) => void sent.push(outcome), { caller });
    expect(seen).toEqual([{ operation: 'uploadAsset', caller, exchangeCaller: caller }]);
    expect(sent).toEqual([{ kind: 'json', status: 200, body: { account: 4, doubled: 4 }, headers: {} }]);
  });
});
