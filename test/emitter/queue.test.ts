import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DeliveryQueue } from '../../src/emitter/queue.js';
import type { DeliveryRecord } from 'cliphook';
import { FakeClock } from './helpers.js';

function record(id: number, at: number): DeliveryRecord {
  return { id: `dlv_${id}`, url: 'https://example.com/', secret: 's', event: 'video.completed', state: 'pending', retry: true, createdAt: id, nextAttemptAt: at, round: 0, attempts: [], payload: '{}' };
}

describe('DeliveryQueue', () => {
  it('pops in order of nextAttemptAt, then age, whatever the order of adds, moves and removals', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 10 }), (times, removals) => {
        const queue = new DeliveryQueue(new FakeClock(0), () => undefined);
        const records = times.map((at, i) => record(i, at));
        for (const r of records) queue.add(r);
        const removed = new Set<DeliveryRecord>();
        for (const n of removals) {
          const r = records[n % Math.max(1, records.length)];
          if (!r || removed.has(r)) continue;
          if (n % 2) {
            queue.remove(r);
            removed.add(r);
          } else {
            r.nextAttemptAt = (n * 7) % 50;
            queue.push(r); // a move
          }
        }
        const popped: DeliveryRecord[] = [];
        for (let r = queue.popDue(Infinity); r; r = queue.popDue(Infinity)) popped.push(r);
        const expected = records.filter((r) => !removed.has(r)).sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || a.createdAt - b.createdAt);
        expect(popped).toEqual(expected);
      }),
    );
  });

  it('arms one timer for the earliest delivery and only pops what is due', () => {
    const clock = new FakeClock(1_000);
    let fired = 0;
    const queue = new DeliveryQueue(clock, () => void fired++);
    for (let i = 0; i < 1_000; i++) queue.add(record(i, 1_000 + 30_000 + i));
    queue.arm();
    expect(clock.timerCount).toBe(1);
    expect(queue.popDue(clock.now())).toBeUndefined();
    clock.advance(29_999);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
    expect(queue.popDue(clock.now())!.id).toBe('dlv_0');
    expect(queue.popDue(clock.now())).toBeUndefined();
    queue.arm();
    expect(clock.timerCount).toBe(1);
    queue.disarm();
    expect(clock.timerCount).toBe(0);
  });
});
