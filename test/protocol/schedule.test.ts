import { describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS, classifyReply, nextRetryDelay } from '../../src/index.js';

describe('retry schedule', () => {
  it('is 30 s, 2 min, 10 min, 30 min, 2 h: six attempts in all', () => {
    expect(RETRY_SCHEDULE_MS).toEqual([30_000, 120_000, 600_000, 1_800_000, 7_200_000]);
    expect(MAX_ATTEMPTS).toBe(6);
    expect([1, 2, 3, 4, 5, 6].map(nextRetryDelay)).toEqual([30_000, 120_000, 600_000, 1_800_000, 7_200_000, null]);
    expect(Object.isFrozen(RETRY_SCHEDULE_MS)).toBe(true);
  });

  it('refuses an attempt number that is not a positive integer', () => {
    expect(() => nextRetryDelay(0)).toThrow(TypeError);
    expect(() => nextRetryDelay(1.5)).toThrow(/attempt/);
  });
});

describe('classifyReply', () => {
  it.each([
    [200, 'delivered'], [201, 'delivered'], [204, 'delivered'], [299, 'delivered'],
    [301, 'retry'], [302, 'retry'], [304, 'retry'],
    [400, 'permanent'], [401, 'permanent'], [404, 'permanent'], [410, 'permanent'], [429, 'permanent'], [499, 'permanent'],
    [500, 'retry'], [502, 'retry'], [503, 'retry'], [504, 'retry'], [100, 'retry'],
  ] as const)('%i is %s', (status, expected) => {
    expect(classifyReply(status)).toBe(expected);
  });

  it('retries errors: timeouts, resets, refused connections', () => {
    expect(classifyReply(new Error('ECONNRESET'))).toBe('retry');
    expect(classifyReply(new DOMException('The operation timed out.', 'TimeoutError'))).toBe('retry');
  });
});
