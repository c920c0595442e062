import { describe, expect, it } from 'vitest';
import { inboxDelay } from '../../../src/index.js';
import { checkBackoff, DEFAULT_BACKOFF } from '../../../src/receiver/inbox/backoff.js';

describe('inboxDelay: p-retry meaning of retries, minTimeout, maxTimeout, factor', () => {
  it('waits minTimeout × factor^(attempt − 1), capped at maxTimeout, and gives up after `retries` retries', () => {
    const options = { retries: 4, minTimeout: 1000, maxTimeout: 5000, factor: 2 };
    expect([1, 2, 3, 4, 5].map((attempt) => inboxDelay(attempt, options))).toEqual([1000, 2000, 4000, 5000, null]);
  });

  it('with retries 0 the first failure is final', () => {
    expect(inboxDelay(1, { ...DEFAULT_BACKOFF, retries: 0 })).toBeNull();
  });

  it('refuses options that make no schedule, naming the option', () => {
    expect(() => checkBackoff({ ...DEFAULT_BACKOFF, retries: 1.5 })).toThrow(/`retries`/);
    expect(() => checkBackoff({ ...DEFAULT_BACKOFF, minTimeout: -1 })).toThrow(/`minTimeout`/);
    expect(() => checkBackoff({ ...DEFAULT_BACKOFF, maxTimeout: 10 })).toThrow(/`maxTimeout`/);
    expect(() => checkBackoff({ ...DEFAULT_BACKOFF, factor: 0.5 })).toThrow(/`factor`/);
  });
});
