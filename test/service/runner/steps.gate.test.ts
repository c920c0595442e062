import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import type { Gate, Identified } from '../../../src/service/core/gate.js';
import { floor, identify, limits } from '../../../src/service/runner/steps.js';
import { callerWith, fakeRun } from './fixtures.js';

const next = async () => undefined;
const who: Identified = { ...callerWith(100), limitName: 'key_1' };

describe('identify, limits and floor: the gate as three steps (issue 31 item 1)', () => {
  it('identify names the bearer key of a keyed route, the admin of a test helper, nobody on a public route', async () => {
    const gate = {
      identify: () => who,
      identifyAdmin: (_auth: string | undefined, _address: string | undefined, { orKey }: { orKey: boolean }) => (orKey ? { admin: false as const, who } : { admin: true as const }),
    } as unknown as Gate;
    const keyed = fakeRun('getVideo');
    await identify(gate)(keyed, next);
    expect(keyed.who).toBe(who);
    const admin = fakeRun('resetService');
    await identify(gate)(admin, next);
    expect(admin.who).toBeUndefined();
    const either = fakeRun('advanceClock');
    await identify(gate)(either, next);
    expect(either.who).toBe(who);
    const open = fakeRun('getPricing');
    await identify({ identify: () => { throw new Error('not asked'); } } as unknown as Gate)(open, next);
    expect(open.who).toBeUndefined();
  });

  it('identify lets the 401 through without going on', async () => {
    const gate = { identify: () => { throw new ServiceError('invalid_api_key', 'no'); } } as unknown as Gate;
    let went = false;
    await expect(identify(gate)(fakeRun('getVideo'), async () => void (went = true))).rejects.toMatchObject({ code: 'invalid_api_key' });
    expect(went).toBe(false);
  });

  it('limits admits the caller with its window\'s headers, and a full window is 429 carrying them', async () => {
    const decision = { allowed: false, limit: 60, remaining: 0, reset: 60, retryAfter: 12 };
    const run = fakeRun('getVideo');
    run.who = who;
    const gate = { admit: async () => ({ caller: callerWith(100), decision }) } as unknown as Gate;
    await expect(limits(gate)(run, next)).rejects.toMatchObject({ code: 'rate_limit_exceeded', retryAfter: 12 });
    expect(run.exchange.caller).toMatchObject({ account: { id: 1 } });
    expect(run.headers['x-ratelimit-limit']).toBe('60');
  });

  it('floor refuses a keyed route below the balance floor and leaves a test helper open', async () => {
    const gate = { floor: (account: { balance: number }) => { if (account.balance < 10) throw new ServiceError('insufficient_credits', 'low'); } } as unknown as Gate;
    const keyed = fakeRun('getVideo');
    keyed.caller = callerWith(5);
    await expect(floor(gate)(keyed, next)).rejects.toMatchObject({ code: 'insufficient_credits' });
    const helper = fakeRun('advanceClock');
    helper.caller = callerWith(5);
    let went = false;
    await floor(gate)(helper, async () => void (went = true));
    expect(went).toBe(true);
  });
});
