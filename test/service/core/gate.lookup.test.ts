import { describe, expect, it } from 'vitest';
import { Gate } from '../../../src/service/core/gate.js';
import { callerWith } from '../runner/fixtures.js';

// Issue 31 item 1: /mcp looks an API key up with the gate of /v1 (`Gate.lookup`, which `identify` uses too),
// and counts a failed credential only once it is no OAuth token either: the lookup refuses and counts nothing.
function gateWith(found: ReturnType<typeof callerWith> | 'invalid_api_key' | 'invalid_auth_header') {
  const failed: string[] = [];
  const identified: number[] = [];
  const gate = new Gate({
    accounts: { authenticate: () => found } as never,
    limiter: { check: () => ({ allowed: true, limit: 60, remaining: 59, reset: 60, retryAfter: 0 }) },
    failures: { gate: () => ({ allowed: true, limit: 30, retryAfter: 0 }), fail: (address: string) => void failed.push(address) } as never,
    identified: (id) => void identified.push(id),
    warn: () => undefined,
  });
  return { gate, failed, identified };
}

describe('Gate.lookup (issue 31 item 1)', () => {
  it('names the key\'s caller with its rate window and acts for its account, as identify does', () => {
    const caller = callerWith(100);
    const { gate, identified } = gateWith(caller);
    expect(gate.lookup('Bearer sk')).toMatchObject({ account: caller.account, key: caller.key, limitName: caller.key.id });
    expect(identified).toEqual([caller.account.id]);
    expect(gate.identify('Bearer sk', '10.0.0.1')).toMatchObject({ limitName: caller.key.id });
  });

  it('says why it names no one, refusing nothing and counting no failure; identify refuses and counts', () => {
    const { gate, failed } = gateWith('invalid_api_key');
    expect(gate.lookup('Bearer nope')).toBe('invalid_api_key');
    expect(failed).toEqual([]);
    expect(() => gate.identify('Bearer nope', '10.0.0.1')).toThrow(expect.objectContaining({ code: 'invalid_api_key' }));
    expect(failed).toEqual(['10.0.0.1']);
    expect(gateWith('invalid_auth_header').gate.lookup(undefined)).toBe('invalid_auth_header');
  });
});
