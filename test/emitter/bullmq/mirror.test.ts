import { describe, expect, it } from 'vitest';
import { RecordMirror } from '../../../src/emitter/bullmq/mirror.js';
import type { StoredRecord } from '../../../src/emitter/bullmq/record-store.js';

function record(id: string, seq: number, v: number, changes: Partial<StoredRecord> = {}): StoredRecord {
  return {
    id, seq, v, gen: 0, job: id, url: 'https://example.com/hook', secret: 'whsec_kept_out', event: 'video.completed',
    state: 'pending', retry: true, createdAt: 1_000 + seq, nextAttemptAt: 1_000 + seq, round: 0, attempts: [],
    payload: JSON.stringify({ event: 'video.completed', id: seq }), ...changes,
  };
}

describe('RecordMirror', () => {
  it('keeps the newest version whatever order a write and its published echo arrive in, and never the secret', () => {
    const changes: string[] = [];
    const mirror = new RecordMirror((before, after) => changes.push(`${before?.state ?? '-'}>${after?.state ?? '-'}`));
    mirror.apply(record('dlv_a', 1, 3, { state: 'delivered', nextAttemptAt: null }));
    mirror.apply(record('dlv_a', 1, 2, { state: 'delivering', nextAttemptAt: null })); // older: ignored
    mirror.apply(record('dlv_a', 1, 3, { state: 'delivered', nextAttemptAt: null })); // the echo: ignored
    expect(mirror.get('dlv_a')).toMatchObject({ state: 'delivered' });
    expect(mirror.record('dlv_a')!.secret).toBe('');
    expect(changes).toEqual(['->delivered']);
    expect(mirror.pending).toBe(0);
  });

  it('lists newest first by creation order across processes, even when changes arrive out of order', () => {
    const mirror = new RecordMirror(() => undefined);
    mirror.apply(record('dlv_b', 2, 1));
    mirror.apply(record('dlv_c', 3, 1));
    mirror.apply(record('dlv_a', 1, 1)); // created first, by another process, heard last
    expect(mirror.list().map((d) => d.id)).toEqual(['dlv_c', 'dlv_b', 'dlv_a']);
    expect(mirror.list({ limit: 1 }).map((d) => d.id)).toEqual(['dlv_c']);
    mirror.apply(record('dlv_b', 2, 2, { state: 'failed', nextAttemptAt: null }));
    expect(mirror.list({ state: 'pending' }).map((d) => d.id)).toEqual(['dlv_c', 'dlv_a']);
    expect(mirror.pending).toBe(2);
    expect(() => mirror.list({ limit: -1 })).toThrow(/`limit`/);
  });

  it('takes a reload after a lost connection: drops what Redis forgot, keeps what a change brought meanwhile', () => {
    const mirror = new RecordMirror(() => undefined);
    for (const [id, seq] of [['dlv_a', 1], ['dlv_b', 2], ['dlv_c', 3]] as const) mirror.apply(record(id, seq, 1));
    mirror.beginLoad();
    // While the read is on its way: dlv_c is forgotten and dlv_d created (published changes).
    mirror.forget(['dlv_c']);
    mirror.apply(record('dlv_d', 4, 1));
    // The read was taken before those changes, and after dlv_b (forgotten while disconnected) was gone.
    mirror.finishLoad([record('dlv_a', 1, 2, { state: 'delivered', nextAttemptAt: null }), record('dlv_c', 3, 1)]);
    expect(mirror.list().map((d) => [d.id, d.state])).toEqual([['dlv_d', 'pending'], ['dlv_a', 'delivered']]);
    expect(mirror.size).toBe(2);
    expect(mirror.pending).toBe(1);
  });
});
