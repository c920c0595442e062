import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { turnWriter } from '../../src/cli/turn-writer.js';

describe('turnWriter', () => {
  it('writes the lines printed in one turn in one write, in order, and the next turn in another', async () => {
    const writes: string[] = [];
    const out = turnWriter({ write: (text: string) => writes.push(text) });
    out('one');
    out('two');
    out('three');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(['one\ntwo\nthree\n']);
    out('four');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(['one\ntwo\nthree\n', 'four\n']);
  });

  it('writes what it holds when the process exits in the same turn', () => {
    // A child process: process.exit() right after printing, before the turn's flush could run.
    const script = `import { turnWriter } from ${JSON.stringify(new URL('../../src/cli/turn-writer.ts', import.meta.url).href)};
      const out = turnWriter(process.stdout); out('last'); out('words'); process.exit(0);`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('last\nwords\n');
  });
});
