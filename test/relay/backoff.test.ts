import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../src/relay/backoff.js';

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
