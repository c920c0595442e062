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
  const options = { minTimeout: 100, maxTimeout: 30_000, factor: 2, randomize: false };
  /** A session that said hello at 1 s and closed `upMs` later (the clock is injected: no real time passes). */
  const session = (upMs: number, { proved = false, events = 0, code = 1006 } = {}) => ({ helloAt: 1_000, proved, events, closedAt: 1_000 + upMs, code });

  it('calls a session healthy once it had the hello and then a pong or 5 s', () => {
    expect(healthySession(null, false, 60_000)).toBe(false); // never said hello
    expect(healthySession(1_000, false, 5_999)).toBe(false);
    expect(healthySession(1_000, false, 6_000)).toBe(true);
    expect(healthySession(1_000, true, 1_000)).toBe(true); // answered the ping sent on the hello
  });

  it('resets the wait after a healthy session, and reconnects at once after one that lasted 5 s or carried an event', () => {
    const backoff = new ReconnectBackoff(options);
    expect([backoff.afterFailedConnect(), backoff.afterFailedConnect(), backoff.afterSession(session(10))]).toEqual([100, 200, 400]);
    // A flaky network: six cuts of healthy connections in a row, each up 5 s or carrying events. Reconnect at once every time.
    expect(Array.from({ length: 6 }, (_, i) => backoff.afterSession(i % 2 ? session(5_000) : session(50, { proved: true, events: 3 })))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(backoff.afterFailedConnect()).toBe(100);
    expect(backoff.afterSession(session(60_000, { code: 1008 }))).toBe(100); // a refused frame always waits
  });

  it('waits the shortest delay, never 0 and never growing, after a session that said hello, answered the ping and dropped', () => {
    const backoff = new ReconnectBackoff(options);
    expect([backoff.afterFailedConnect(), backoff.afterFailedConnect(), backoff.afterFailedConnect()]).toEqual([100, 200, 400]);
    // Healthy (the pong), so the count starts over; but nothing came and it lasted 4.999 s: no immediate reconnect.
    expect(Array.from({ length: 6 }, () => backoff.afterSession(session(4_999, { proved: true })))).toEqual(Array(6).fill(100));
    expect(backoff.afterFailedConnect()).toBe(100); // the count was reset
    expect(backoff.afterSession(session(5_000, { proved: true }))).toBe(0);
    expect(backoff.afterSession(session(0, { proved: true, events: 1 }))).toBe(0);
    // With jitter, as p-retry randomises: 1-2 times the shortest delay.
    const jittered = new ReconnectBackoff({ ...options, randomize: true }, () => 0.5);
    expect(jittered.afterSession(session(10, { proved: true }))).toBe(150);
  });
});
