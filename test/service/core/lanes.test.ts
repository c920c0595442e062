import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Lanes, peek, pop, push, type Timer } from '../../../src/service/core/lanes.js';

let seq = 0;
const timer = (lane: number | null, at: number): Timer => ({ at, seq: seq++, callback: () => undefined, lane, cancelled: false });

describe('Lanes (the simulated clock\'s times and timers)', () => {
  it('finds the earliest timer of any lane on the service\'s time: an account ahead by its lead fires sooner', () => {
    const lanes = new Lanes();
    push(lanes.of(null).heap, timer(null, 1_000));
    lanes.of(7).lead = 600;
    const ahead = timer(7, 1_500); // due at 1,500 on account 7's time: 900 on the service's
    push(lanes.of(7).heap, ahead);
    expect(lanes.earliest()).toMatchObject({ timer: ahead, due: 900 });
    expect(lanes.pending()).toBe(2);
    expect(lanes.pending(7)).toBe(1);
    expect(lanes.leads()).toEqual(new Map([[7, 600]]));
  });

  it('drops an account\'s empty lane at the service\'s time, unless an advance is moving it', () => {
    const lanes = new Lanes();
    lanes.of(3);
    lanes.moving.add(3);
    lanes.earliest();
    lanes.of(3).lead = 0;
    expect(lanes.forget(3)).toBe(true); // still there while moving
    lanes.of(4);
    lanes.earliest();
    expect(lanes.forget(4)).toBe(false); // dropped: nothing pending, no lead
  });

  it('forgets an account: its timers are cancelled and never surface; clearLeads puts times back', () => {
    const lanes = new Lanes();
    const t = timer(5, 10);
    push(lanes.of(5).heap, t);
    lanes.of(6).lead = 100;
    expect(lanes.forget(5)).toBe(true);
    expect(t.cancelled).toBe(true);
    expect(lanes.earliest()).toBeUndefined();
    lanes.clearLeads(6);
    expect(lanes.leadOf(6)).toBe(0);
  });

  it('pops timers in (at, seq) order whatever order they were pushed in, interleaved with pops and cancellations', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ at: fc.integer({ min: 0, max: 20 }), pop: fc.boolean(), cancel: fc.boolean() }), { maxLength: 200 }), (steps) => {
        const heap: Timer[] = [];
        const model: Timer[] = [];
        const order = (a: Timer, b: Timer) => a.at - b.at || a.seq - b.seq;
        for (const step of steps) {
          const made = timer(null, step.at);
          made.cancelled = step.cancel;
          push(heap, made);
          model.push(made);
          if (step.pop) {
            model.sort(order);
            expect(pop(heap)).toBe(model.shift());
          }
        }
        model.sort(order);
        // peek drops the cancelled timers that surface before the first live one.
        expect(peek(heap)).toBe(model.find((kept) => !kept.cancelled));
        while (model[0]?.cancelled) model.shift();
        const popped: Timer[] = [];
        for (let next = pop(heap); next; next = pop(heap)) popped.push(next);
        expect(popped).toEqual(model);
      }),
    );
  });
});
