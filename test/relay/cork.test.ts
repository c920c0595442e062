import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { corkPerTurn } from '../../src/relay/cork.js';

function recorder() {
  const writes: string[][] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push([chunk.toString()]);
      done();
    },
    writev(chunks, done) {
      writes.push(chunks.map(({ chunk }) => String(chunk)));
      done();
    },
  });
  return { sink, writes };
}

describe('corkPerTurn', () => {
  it('sends what was written in one turn as one write, at the end of that turn', async () => {
    const { sink, writes } = recorder();
    const cork = corkPerTurn(sink);
    for (const frame of ['a', 'b', 'c']) {
      cork();
      sink.write(frame);
    }
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual([['a', 'b', 'c']]);
    cork();
    sink.write('d');
    await nextTurn();
    expect(writes).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('leaves a destroyed socket alone', async () => {
    const { sink, writes } = recorder();
    const cork = corkPerTurn(sink);
    sink.destroy();
    cork();
    await nextTurn();
    expect(sink.writableCorked).toBe(0);
    expect(writes).toEqual([]);
  });
});
