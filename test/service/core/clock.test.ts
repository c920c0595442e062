import { describe, expect, it } from 'vitest';
import { SimulatedClock, type RealTimers } from '../../../src/service/core/clock.js';
import { systemClock, type EmitterClock } from '../../../src/emitter/types.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** Real timers under the test's control: `tick(ms)` moves real time and runs what falls due. */
function fakeReal(start = 1_000_000) {
  let now = start;
  const timers = new Map<number, { at: number; callback: () => void }>();
  let id = 0;
  const real: RealTimers = {
    now: () => now,
    setTimeout: (callback, ms) => {
      timers.set(++id, { at: now + ms, callback });
      return id;
    },
    clearTimeout: (handle) => void timers.delete(handle as number),
  };
  return {
    real,
    armed: () => timers.size,
    tick(ms: number) {
      now += ms;
      for (const [key, timer] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (timer.at > now) continue;
        timers.delete(key);
        timer.callback();
      }
    },
  };
}

describe('SimulatedClock, frozen', () => {
  it('stands still until advanced, then fires each timer at its own instant, in order', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    const fired: Array<[string, number]> = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 90_000);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 30_000);
    clock.setTimeout(() => fired.push(['c', clock.now()]), 90_000);
    clock.setTimeout(() => fired.push(['late', clock.now()]), 200_000);
    expect(clock.now()).toBe(T0);
    await clock.advance(120_000);
    expect(fired).toEqual([['a', T0 + 30_000], ['b', T0 + 90_000], ['c', T0 + 90_000]]);
    expect(clock.now()).toBe(T0 + 120_000);
    expect(clock.timers).toBe(1);
  });

  it('fires timers set by timers it fired when they fall within the same advance (a retry schedule)', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    const attempts: number[] = [];
    const schedule = [30_000, 120_000, 600_000, 1_800_000, 7_200_000];
    const attempt = () => {
      attempts.push(clock.now() - T0);
      const next = schedule[attempts.length - 1];
      if (next !== undefined) clock.setTimeout(attempt, next);
    };
    clock.setTimeout(attempt, 0);
    await clock.advance(3 * 3_600_000);
    expect(attempts).toEqual([0, 30_000, 150_000, 750_000, 2_550_000, 9_750_000]);
  });

  it('settles the work a timer starts before moving on', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    const seen: number[] = [];
    // The work of a timer finishes a few turns later and then schedules the next step.
    clock.setTimeout(() => void Promise.resolve().then(() => clock.setTimeout(() => seen.push(clock.now() - T0), 1_000)), 1_000);
    await clock.advance(5_000);
    expect(seen).toEqual([2_000]);
  });

  it('never fires a cleared timer, runs concurrent advances one after another, and refuses a negative one', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    let fired = 0;
    clock.clearTimeout(clock.setTimeout(() => fired++, 10));
    await Promise.all([clock.advance(1_000), clock.advance(2_000)]);
    expect(fired).toBe(0);
    expect(clock.now()).toBe(T0 + 3_000);
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
    expect(() => new SimulatedClock({ start: Number.NaN })).toThrow(/`start`/);
  });

  it('keeps going when a timer throws', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    process.on('uncaughtException', onError);
    try {
      let after = 0;
      clock.setTimeout(() => {
        throw new Error('boom');
      }, 1);
      clock.setTimeout(() => after++, 2);
      await clock.advance(10);
      expect(after).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(errors).toHaveLength(1);
    } finally {
      process.off('uncaughtException', onError);
    }
  });

  it('runs what is due at the current instant without an advance, and nothing later', async () => {
    const fake = fakeReal();
    const clock = new SimulatedClock({ frozen: true, start: T0, real: fake.real });
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('now'), 0);
    clock.setTimeout(() => fired.push('later'), 1);
    expect(fake.armed()).toBe(1);
    fake.tick(0);
    expect(fired).toEqual(['now']);
    fake.tick(60_000);
    expect(fired).toEqual(['now']);
    await clock.advance(1);
    expect(fired).toEqual(['now', 'later']);
  });

  it('fits the emitter clock interface', () => {
    const clock: EmitterClock = new SimulatedClock({ frozen: true });
    expect(typeof clock.now()).toBe('number');
    expect(Object.keys(systemClock).sort()).toEqual(['clearTimeout', 'now', 'setTimeout']);
  });
});

describe('SimulatedClock, running with the real clock', () => {
  it('runs with real time, ahead of it by what was advanced, and fires on one real timer', async () => {
    const fake = fakeReal();
    const clock = new SimulatedClock({ real: fake.real, start: T0 });
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now() - T0), 5_000);
    clock.setTimeout(() => fired.push(clock.now() - T0), 60_000);
    expect(fake.armed()).toBe(1);
    fake.tick(5_000);
    expect(fired).toEqual([5_000]);
    await clock.advance(30_000);
    expect(clock.now()).toBe(T0 + 35_000);
    fake.tick(25_000);
    expect(fired).toEqual([5_000, 60_000]);
    expect(fake.armed()).toBe(0);
  });

  it('stop() disarms it for good', () => {
    const fake = fakeReal();
    const clock = new SimulatedClock({ real: fake.real });
    let fired = 0;
    clock.setTimeout(() => fired++, 10);
    clock.stop();
    fake.tick(100);
    expect(fired).toBe(0);
    expect(fake.armed()).toBe(0);
  });
});

describe('SimulatedClock: its lead over real time (issue 20 item 8)', () => {
  it('says how far ahead of real time it runs, and tells listeners once each advance has moved it', async () => {
    const fake = fakeReal();
    const clock = new SimulatedClock({ real: fake.real });
    expect(clock.ahead).toBe(0);
    const told: number[] = [];
    const stop = clock.onAdvance(() => told.push(clock.ahead));
    await clock.advance(2 * 86_400_000);
    fake.tick(5_000);
    expect(clock.ahead).toBe(2 * 86_400_000);
    stop();
    await clock.advance(1_000);
    expect(told).toEqual([2 * 86_400_000]);
    expect(new SimulatedClock({ real: fake.real, start: fake.real.now() + 60_000 }).ahead).toBe(60_000);
  });
});

// Issue 22: each account's own time on the one clock.
describe('SimulatedClock: a time per account', () => {
  const T0 = Date.parse('2026-01-01T00:00:00Z');

  it('advance(ms, { account }) moves that account only; advance(ms) moves every account; timers fire on their account’s time, acting for it', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    const fired: Array<[string, number | null, number]> = [];
    clock.as(1, () => clock.setTimeout(() => fired.push(['one', clock.account, clock.now()]), 1_000));
    clock.as(2, () => clock.setTimeout(() => fired.push(['two', clock.account, clock.now()]), 1_000));
    await clock.advance(5_000, { account: 1 });
    expect(fired).toEqual([['one', 1, T0 + 1_000]]);
    expect([clock.nowOf(1), clock.nowOf(2), clock.nowOf(null), clock.leadOf(1)]).toEqual([T0 + 5_000, T0, T0, 5_000]);
    expect(clock.timersOf(2)).toBe(1);
    await clock.advance(1_000);
    expect(fired.at(-1)).toEqual(['two', 2, T0 + 1_000]);
    expect([clock.nowOf(1), clock.nowOf(2)]).toEqual([T0 + 6_000, T0 + 1_000]);
    expect(clock.as(1, () => clock.now())).toBe(T0 + 6_000);
    expect(clock.now()).toBe(T0 + 1_000);
  });

  it('scope() + actFor() make a whole async request act for an account; outside, now() is the service’s', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    clock.restoreLead(3, 60_000);
    const seen = await clock.scope(async () => {
      const before = clock.now();
      clock.actFor(3);
      await new Promise((resolve) => setImmediate(resolve));
      return [before, clock.now(), clock.account];
    });
    expect(seen).toEqual([T0, T0 + 60_000, 3]);
    clock.actFor(4); // outside a scope: nothing
    expect(clock.account).toBeNull();
  });

  it('orders an account’s timers and its lane sources by its time, and ends when a source makes no progress', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    const order: string[] = [];
    let retryAt: number | undefined = T0 + 2_000;
    clock.addLaneSource({ next: (account) => (account === 1 ? retryAt : undefined), fire: () => { order.push(`retry@${clock.now() - T0}`); retryAt = undefined; } });
    clock.as(1, () => clock.setTimeout(() => order.push(`timer@${clock.now() - T0}`), 1_000));
    clock.as(1, () => clock.setTimeout(() => order.push(`timer@${clock.now() - T0}`), 3_000));
    await clock.advance(10_000, { account: 1 });
    expect(order).toEqual(['timer@1000', 'retry@2000', 'timer@3000']);

    const stuck = new SimulatedClock({ frozen: true, start: T0 });
    let fires = 0;
    stuck.addLaneSource({ next: () => T0 + 5, fire: () => void fires++ });
    await stuck.advance(10, { account: 1 });
    expect(fires).toBe(1);
    expect(stuck.nowOf(1)).toBe(T0 + 10);
  });

  it('clearLeads() puts accounts back on the service’s time; forget() drops an account and its timers; rewind() clears leads too', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    let ran = false;
    clock.as(5, () => clock.setTimeout(() => (ran = true), 10));
    clock.restoreLead(6, 1_000);
    expect([...clock.leads()]).toEqual([[6, 1_000]]);
    clock.forget(5);
    await clock.advance(100);
    expect(ran).toBe(false);
    clock.clearLeads(6);
    expect(clock.leads().size).toBe(0);
    clock.restoreLead(6, 1_000);
    clock.rewind();
    expect(clock.leadOf(6)).toBe(0);
  });

  it('on a running clock, an account’s advance fires its timer in real terms at once and leaves others waiting', async () => {
    const clock = new SimulatedClock();
    let mine = false;
    let theirs = false;
    clock.as(1, () => clock.setTimeout(() => (mine = true), 60_000));
    clock.as(2, () => clock.setTimeout(() => (theirs = true), 60_000));
    await clock.advance(61_000, { account: 1 });
    expect([mine, theirs]).toEqual([true, false]);
    expect(clock.leadOf(1)).toBeGreaterThanOrEqual(61_000);
    expect(Math.abs(clock.ahead)).toBeLessThan(1_000);
    clock.stop();
  });

  // Issue 29 item 3: every advance used to queue behind every other and wait for every account's work.
  it('an account’s advance waits for its own work only, never behind another account’s; advance(ms) still waits for all', async () => {
    const clock = new SimulatedClock({ frozen: true, start: T0 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const asked: Array<number | null> = [];
    // Account 1's work (a webhook at a receiver that does not answer) is in flight until released.
    let working = false;
    clock.settleWith(async (account) => {
      asked.push(account);
      if (working && account !== 2) await held;
    });
    clock.as(1, () => clock.setTimeout(() => (working = true), 1_000));
    clock.as(2, () => clock.setTimeout(() => undefined, 1_000));
    const order: string[] = [];
    const first = clock.advance(5_000, { account: 1 }).then(() => order.push('1'));
    const second = clock.advance(5_000, { account: 2 }).then(() => order.push('2'));
    // Account 2 is done while account 1's work is still held; a second advance of 1 and the service's wait.
    const again = clock.advance(1_000, { account: 1 }).then(() => order.push('1 again'));
    clock.setTimeout(() => undefined, 500);
    const all = clock.advance(1_000).then(() => order.push('all'));
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['2']);
    expect(clock.leadOf(2)).toBe(5_000);
    expect(asked).toContain(2);
    release();
    await Promise.all([first, second, again, all]);
    expect(order).toEqual(['2', '1', '1 again', 'all']);
    expect(asked).toContain(null);
    expect([clock.leadOf(1), clock.leadOf(2), clock.now() - T0]).toEqual([6_000, 5_000, 1_000]);
  });
});
