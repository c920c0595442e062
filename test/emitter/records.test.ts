import { describe, expect, it } from 'vitest';
import { DeliveryBook } from '../../src/emitter/records.js';
import type { DeliveryRecord, DeliveryState } from 'cliphook';

function record(n: number, state: DeliveryState = 'pending', lastAttemptAt?: number): DeliveryRecord {
  const attempts = lastAttemptAt === undefined ? [] : [{ at: lastAttemptAt, status: 200, error: null, latencyMs: 1, response: '' }];
  return { id: `dlv_${n}`, url: 'https://example.com/', secret: 's', event: 'video.completed', state, retry: true, createdAt: n, nextAttemptAt: null, round: 0, attempts, payload: '{"n":1}' };
}

describe('DeliveryBook', () => {
  it('lists newest first, filters by state, stops at the limit, and shows copies without the secret', () => {
    const book = new DeliveryBook(10);
    const states: DeliveryState[] = ['pending', 'delivered', 'failed', 'delivered', 'pending'];
    states.forEach((state, i) => book.add(record(i, state)));
    expect(book.size).toBe(5);
    expect(book.list().map((d) => d.id)).toEqual(['dlv_4', 'dlv_3', 'dlv_2', 'dlv_1', 'dlv_0']);
    expect(book.list({ state: 'delivered' }).map((d) => d.id)).toEqual(['dlv_3', 'dlv_1']);
    expect(book.list({ limit: 2 }).map((d) => d.id)).toEqual(['dlv_4', 'dlv_3']);
    expect(book.list({ limit: 0 })).toEqual([]);
    const shown = book.get('dlv_1')!;
    expect(shown).not.toHaveProperty('secret');
    expect(shown.payload).toEqual({ n: 1 });
    expect(book.get('dlv_9')).toBeUndefined();
    expect(book.record('dlv_1')).toBe(book.record('dlv_1'));
  });

  it('refuses a limit that is not a non-negative integer with the same TypeError as before', () => {
    const book = new DeliveryBook(10);
    for (const limit of [-1, 1.5, Number.NaN, Infinity]) {
      expect(() => book.list({ limit })).toThrow(new TypeError(`Expected \`limit\` to be a non-negative integer, got ${limit}.`));
    }
  });

  it('forgets the oldest finished beyond retainFinished, in order of finishing, and returns their ids', () => {
    const book = new DeliveryBook(2);
    for (let i = 0; i < 5; i++) book.add(record(i, 'delivered'));
    for (const n of [3, 0, 4, 1]) book.markFinished(`dlv_${n}`);
    expect(book.forgetPastRetention()).toEqual(['dlv_3', 'dlv_0']);
    expect(book.has('dlv_3')).toBe(false);
    expect(book.has('dlv_2')).toBe(true); // never marked finished: never forgotten
    expect(book.forgetPastRetention()).toEqual([]);
    book.markUnfinished('dlv_4'); // as while it is redelivered
    book.add(record(5, 'failed'));
    book.markFinished('dlv_5');
    book.markFinished('dlv_6'); // unknown ids count too, as the Set did
    expect(book.forgetPastRetention()).toEqual(['dlv_1']);
    expect(book.list().map((d) => d.id)).toEqual(['dlv_5', 'dlv_4', 'dlv_2']);
  });

  it('restores loaded records in stored order, counting all but pending as finished by last activity', () => {
    const book = new DeliveryBook(1);
    book.restore([record(0, 'failed', 50), record(1, 'pending'), record(2, 'delivered', 10), record(3, 'delivered')]);
    expect(book.list().map((d) => d.id)).toEqual(['dlv_3', 'dlv_2', 'dlv_1', 'dlv_0']);
    // Last activity: dlv_3 created at 3, dlv_2 attempted at 10, dlv_0 attempted at 50.
    expect(book.forgetPastRetention()).toEqual(['dlv_3', 'dlv_2']);
  });

  it('drops a removed record from the list and from retention', () => {
    const book = new DeliveryBook(0);
    book.add(record(0, 'delivered'));
    book.markFinished('dlv_0');
    book.remove('dlv_0');
    expect(book.size).toBe(0);
    expect(book.forgetPastRetention()).toEqual([]);
  });
});
