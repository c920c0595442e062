import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import { StoreWriteError } from '../../../src/service/core/store.js';
import { answer } from '../../../src/service/runner/steps.js';
import { failureOf } from '../../../src/service/runner/failure.js';
import { fakeRun } from './fixtures.js';

const parts = (told: string[] = []) => ({ site: { origin: 'http://svc.test' }, warn: (message: string) => void told.push(`warn ${message}`), report: (error: Error) => void told.push(`report ${error.message}`) });

describe('the answer step: one error → problem mapping (issue 31 item 1)', () => {
  it('answers the command\'s value with the route\'s 2xx status and the window\'s headers', async () => {
    const run = fakeRun('createVideo');
    run.headers = { 'x-ratelimit-limit': '60' };
    await answer(parts())(run, async () => void (run.value = { id: 1 }));
    expect(run.sent).toEqual([{ kind: 'json', status: 202, body: { id: 1 }, headers: { 'x-ratelimit-limit': '60' } }]);
  });

  it('answers a refusal as its problem (a 402 with its top-up link, a 401 with its challenge) and journals its code', async () => {
    const run = fakeRun('getVideo');
    await answer(parts())(run, async () => { throw new ServiceError('insufficient_credits', 'low', { extra: { required: 10, balance: 2 } }); });
    expect(run.sent[0]).toMatchObject({ kind: 'problem', body: { status: 402, code: 'insufficient_credits', instance: '/v1/videos/{id}', user_action: { url: 'http://svc.test/settings/top-up' } } });
    expect(run.exchange.code).toBe('insufficient_credits');
    const unauthorised = fakeRun('getVideo');
    await answer(parts())(unauthorised, async () => { throw new ServiceError('invalid_api_key', 'no'); });
    expect(unauthorised.sent[0]).toMatchObject({ kind: 'problem', headers: { 'www-authenticate': 'Bearer realm="cliphook", error="invalid_token"' } });
  });

  it('sends nothing for a cut after the operation, and ends an answer that had begun', async () => {
    const cut = fakeRun('createVideo');
    cut.cutAfter = true;
    await answer(parts())(cut, async () => void (cut.value = { id: 1 }));
    expect(cut.sent).toEqual([{ kind: 'drop' }]);
    expect(cut.exchange.dropped).toBe(true);
    const begun = fakeRun('getMedia', { answered: true });
    await answer(parts())(begun, async () => { throw new Error('disk gone'); });
    expect(begun.sent).toEqual([{ kind: 'abort' }]);
  });
});

describe('failureOf: the one place a failed write becomes 503 (issue 31 item 1)', () => {
  it('answers a failed write 503 upstream_busy, warned; anything else 500, reported; a refusal as it is', () => {
    const told: string[] = [];
    expect(failureOf(new StoreWriteError(new Error('disk full')), parts(told))).toMatchObject({ code: 'upstream_busy', retryAfter: 5 });
    expect(failureOf(new TypeError('boom'), parts(told))).toMatchObject({ code: 'internal_error' });
    const refusal = new ServiceError('not_found', 'no');
    expect(failureOf(refusal, parts(told))).toBe(refusal);
    expect(told).toEqual(['warn a change was not saved and was taken back: cannot write the data file: disk full', 'report boom']);
  });
});
