import { afterEach, describe, expect, it, vi } from 'vitest';
import { healthySession, ReconnectBackoff, sleep } from '../../src/relay/backoff.js';

afterEach(() => vi.useRealTimers());

describe('sleep', () => {
  it('waits its time, ends early when the signal aborts, and not at all when it already has', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    let woke = false;
    const waiting = sleep(5_000, controller.signal).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(4_999);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(woke).toBe(true);

    const aborted = sleep(60_000, controller.signal);
    controller.abort();
    await aborted; // resolves without advancing the clock
    expect(vi.getTimerCount()).toBe(0);
    await sleep(60_000, controller.signal); // already aborted: no timer at all
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('healthySession and ReconnectBackoff', () => {
  it('calls a session healthy once it had the hello and then a pong or 5 s, and resets the wait after one', () => {
    expect(healthySession(null, false, 60_000)).toBe(false); // never said hello
    expect(healthySession(1_000, false, 5_999)).toBe(false);
    expect(healthySession(1_000, false, 6_000)).toBe(true);
    expect(healthySession(1_000, true, 1_000)).toBe(true); // answered the ping sent on the hello
    const backoff = new ReconnectBackoff({ minTimeout: 100, maxTimeout: 30_000, factor: 2, randomize: false });
    expect([backoff.afterFailedConnect(), backoff.afterFailedConnect(), backoff.afterSession(false, 1006)]).toEqual([100, 200, 400]);
    // Six cuts of healthy connections in a row: reconnect at once every time.
    expect(Array.from({ length: 6 }, () => backoff.afterSession(true, 1006))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(backoff.afterFailedConnect()).toBe(100);
    expect(backoff.afterSession(true, 1008)).toBe(100); // a refused frame always waits
  });
});
