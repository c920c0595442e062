import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FairQueue } from '../../src/emitter/fair-queue.js';
import type { DeliveryRecord } from 'cliphook';
import { FakeClock } from './helpers.js';

function record(id: number, to: string, at: number): DeliveryRecord {
  return { id: `dlv_${id}`, url: `https://${to}.example.com/hooks`, secret: 's', event: 'video.completed', state: 'pending', retry: true, createdAt: id, nextAttemptAt: at, round: 0, attempts: [], payload: '{}' };
}

describe('FairQueue', () => {
  it('gives every queued delivery exactly once, each destination in its own time order and never above its cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ to: fc.constantFrom('a', 'b', 'c'), at: fc.integer({ min: 0, max: 20 }) }), { maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.integer({ min: 1, max: 3 }),
        (specs, removals, cap) => {
          const queue = new FairQueue(new FakeClock(0), () => undefined, cap);
          const records = specs.map(({ to, at }, i) => record(i, to, at));
          for (const r of records) queue.add(r);
          const removed = new Set<DeliveryRecord>();
          for (const n of removals) {
            const r = records[n % Math.max(1, records.length)];
            if (!r || removed.has(r)) continue;
            queue.remove(r);
            removed.add(r);
          }
          expect(queue.size).toBe(records.length - removed.size);
          const running = new Map<string, DeliveryRecord[]>();
          const given: DeliveryRecord[] = [];
          for (let now = 0; now <= 20; now++) {
            // Ends the oldest attempt of each destination at every tick, then takes all that is due.
            for (const list of running.values()) {
              const done = list.shift();
              if (done) queue.release(done);
            }
            for (let r = queue.popDue(now); r; r = queue.popDue(now)) {
              expect(r.nextAttemptAt).toBeLessThanOrEqual(now);
              const list = running.get(r.url) ?? [];
              list.push(r);
              running.set(r.url, list);
              expect(list.length).toBeLessThanOrEqual(cap);
              given.push(r);
            }
          }
          for (let more = 0; queue.size > 0 && more < 100; more++) {
            for (const list of running.values()) {
              const done = list.shift();
              if (done) queue.release(done);
            }
            for (let r = queue.popDue(20); r; r = queue.popDue(20)) {
              (running.get(r.url) ?? running.set(r.url, []).get(r.url)!).push(r);
              given.push(r);
            }
          }
          expect(new Set(given)).toEqual(new Set(records.filter((r) => !removed.has(r))));
          expect(given).toHaveLength(records.length - removed.size);
          for (const to of ['a', 'b', 'c']) {
            const times = given.filter((r) => r.url.startsWith(`https://${to}.`)).map((r) => r.nextAttemptAt!);
            expect(times).toEqual([...times].sort((x, y) => x - y));
          }
        },
      ),
    );
  });

  it('keeps one timer, for the earliest destination waiting, and none for one at its cap', () => {
    const clock = new FakeClock(0);
    let due = 0;
    const queue = new FairQueue(clock, () => void due++, 1);
    queue.add(record(1, 'a', 0));
    queue.add(record(2, 'a', 500));
    queue.add(record(3, 'b', 1_000));
    const first = queue.popDue(0)!;
    expect(first.id).toBe('dlv_1');
    queue.arm();
    expect(clock.timerCount).toBe(1);
    clock.advance(500); // a is at its cap: its delivery due at 500 waits for the release, not the timer
    expect(due).toBe(0);
    expect(queue.popDue(500)).toBeUndefined();
    queue.release(first);
    expect(queue.popDue(500)!.id).toBe('dlv_2');
    queue.arm();
    clock.advance(500);
    expect(due).toBe(1);
    expect(queue.popDue(1_000)!.id).toBe('dlv_3');
    queue.arm();
    expect(clock.timerCount).toBe(0);
  });

  it('takes the destinations in turn, one each, whatever their backlog', () => {
    const queue = new FairQueue(new FakeClock(0), () => undefined, 100);
    for (let i = 0; i < 50; i++) queue.add(record(i, 'a', 0));
    queue.add(record(100, 'b', 1));
    queue.add(record(101, 'c', 2));
    queue.add(record(102, 'b', 3));
    const order = Array.from({ length: 7 }, () => new URL(queue.popDue(10)!.url).hostname[0]);
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b', 'a', 'a']);
  });
});
