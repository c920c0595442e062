import { afterEach, describe, expect, it } from 'vitest';
import { cli, tempDir } from './helpers.js';

// `cliphook inbox purge` drops one state's records: a missing --state is named, with the values it takes.

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('cliphook inbox purge --state', () => {
  it('without --state: one line naming the flag and its values, exit 2, before any inbox is opened', async () => {
    const [dir, remove] = await tempDir();
    cleanups.push(remove);
    const result = await cli('inbox', 'purge', '--file', `${dir}/inbox.json`);
    expect(result.stderr).toBe('cliphook: inbox purge needs --state dead or --state done (pending and running events are never dropped)\n');
    expect(result.code).toBe(2);
  });

  it('with a state it cannot purge: the same values, and what it got', async () => {
    const result = await cli('inbox', 'purge', '--state', 'pending', '--file', 'nowhere/inbox.json');
    expect(result.stderr).toBe('cliphook: --state expects dead or done (pending and running events are never dropped), got "pending"\n');
    expect(result.code).toBe(2);
  });
});
