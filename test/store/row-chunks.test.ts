import { describe, expect, it } from 'vitest';
import { RowChunks } from '../../src/store/row-chunks.js';

const doc = (rows: RowChunks) => JSON.parse(Buffer.concat(rows.pieces('{"r":[', ']}')).toString('utf8')) as { r: unknown[] };

describe('RowChunks', () => {
  it('writes an empty array when it holds nothing', () => {
    expect(doc(new RowChunks())).toEqual({ r: [] });
  });

  it('joins rows across sealed chunks and the open one into one valid document, in order', () => {
    const rows = new RowChunks();
    for (let i = 0; i < 5000; i++) rows.add(JSON.stringify([`k${i}`, 'é', i]), i);
    const { r } = doc(rows);
    expect(r).toHaveLength(5000);
    expect(r[0]).toEqual(['k0', 'é', 0]);
    expect(r[4999]).toEqual(['k4999', 'é', 4999]);
    expect(rows.rows).toBe(5000);
  });

  it('drops a chunk only once every row in it has expired, and counts what is left', () => {
    const rows = new RowChunks();
    for (let i = 0; i < 5000; i++) rows.add(JSON.stringify([i]), i);
    rows.prune(2047); // the first chunk (0..2047) has wholly expired
    expect(rows.rows).toBe(5000 - 2048);
    expect(doc(rows).r[0]).toEqual([2048]);
    rows.prune(2048); // the second chunk still has unexpired rows: kept whole
    expect(rows.rows).toBe(5000 - 2048);
    rows.prune(10_000);
    expect(rows.rows).toBe(0);
    expect(doc(rows)).toEqual({ r: [] });
  });
});
