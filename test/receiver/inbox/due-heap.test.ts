import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DueHeap } from '../../../src/receiver/inbox/due-heap.js';

describe('DueHeap (the file inbox\'s pending records by due time)', () => {
  it('takes entries by due time, ties in the order they were pushed, with pops interleaved', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ at: fc.integer({ min: 0, max: 20 }), pop: fc.boolean() }), { maxLength: 200 }), (steps) => {
        const heap = new DueHeap();
        const model: { at: number; id: string; seq: number }[] = [];
        const order = (a: { at: number; seq: number }, b: { at: number; seq: number }) => a.at - b.at || a.seq - b.seq;
        steps.forEach((step, seq) => {
          const id = `evt_${seq}`;
          heap.push(step.at, id);
          model.push({ at: step.at, id, seq });
          if (step.pop) {
            model.sort(order);
            const next = model.shift()!;
            expect([heap.peekAt(), heap.peekId()]).toEqual([next.at, next.id]);
            heap.pop();
          }
        });
        model.sort(order);
        expect(heap.size).toBe(model.length);
        for (const next of model) {
          expect([heap.peekAt(), heap.peekId()]).toEqual([next.at, next.id]);
          heap.pop();
        }
        expect(heap.peekAt()).toBeUndefined();
      }),
    );
  });
});
