// Issue 30 item 4b: the memory store sends a turn's replies together, as the file store's group commit does.
import { expect, it } from 'vitest';
import { MemoryDeliveryStore } from '../../src/index.js';

it('completes every delivery of one event-loop turn with one shared promise, resolved once the turn has run', async () => {
  const store = new MemoryDeliveryStore();
  const order: string[] = [];
  setImmediate(() => order.push('earlier immediate'));
  const first = store.complete(['d:1', 'e:1']);
  const second = store.complete(['d:2', 'e:2']);
  expect(second).toBe(first);
  await first.then(() => order.push('completed'));
  expect(order).toEqual(['earlier immediate', 'completed']);
  // The mark is made at once, not at the end of the turn.
  expect(store.claim(['d:1'], 1000, 'me')).toBe('processed');
  // The next turn gets a promise of its own.
  expect(store.complete(['d:3'])).not.toBe(first);
});
