import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import type { Gate, Identified } from '../../../src/service/core/gate.js';
import { command, floor, identify, limits } from '../../../src/service/runner/steps.js';
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

describe('the gate and the command step without a promise of their own (issue 31: the bench\'s service figures)', () => {
  it('Gate.admit answers at once with the limiter in memory, a promise with one that waits (Redis), and 503 when that fails', async () => {
    const { Gate, RateLimiter } = await import('../../../src/service/core/gate.js');
    const warned: string[] = [];
    const gateWith = (check: (key: string) => unknown) => new Gate({ accounts: {} as never, failures: {} as never, limiter: { check } as never, warn: (message) => void warned.push(message) });
    const memory = new RateLimiter({ now: () => 0 });
    const counted = (): Identified => ({ account: { id: 1, balance: 100, usage: { requests: 0 } } as never, key: { id: 'key_1' } as never, limitName: 'key_1' });
    const admitted = gateWith((key) => memory.check(key)).admit(counted());
    expect(admitted).not.toBeInstanceOf(Promise);
    expect(admitted).toMatchObject({ decision: { allowed: true, remaining: 59 } });
    const waited = gateWith(async (key) => memory.check(key)).admit(counted());
    expect(waited).toBeInstanceOf(Promise);
    expect(await waited).toMatchObject({ decision: { allowed: true, remaining: 58 } });
    await expect(gateWith(async () => { throw new Error('down'); }).admit(who)).rejects.toMatchObject({ code: 'upstream_busy' });
    expect(() => gateWith(() => { throw new Error('down'); }).admit(who)).toThrow(expect.objectContaining({ code: 'upstream_busy' }));
    expect(warned).toEqual(['cannot count a request in Redis: down', 'cannot count a request in Redis: down']);
  });

  it('limits and command are plain when nothing waits: each hands back the promise of the rest itself', async () => {
    const decision = { allowed: true, limit: 60, remaining: 59, reset: 60, retryAfter: 0 };
    const run = fakeRun('getVideo', { command: () => ({ id: 7 }) });
    run.who = who;
    const rest = Promise.resolve();
    expect(limits({ admit: () => ({ caller: callerWith(100), decision }) })(run, () => rest)).toBe(rest);
    expect(run.headers['x-ratelimit-remaining']).toBe('59');
    expect(command(run, () => rest)).toBe(rest);
    expect(run.value).toEqual({ id: 7 });
    const later = fakeRun('getVideo', { command: async () => ({ id: 8 }) });
    await command(later, next);
    expect(later.value).toEqual({ id: 8 });
  });
});
