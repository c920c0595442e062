import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startServe, tempDir } from '../../cli/helpers.js';

// Issue 29 item 1 in a real `cliphook serve`: a hostile journal filter froze the process, which then
// ignored SIGTERM until killed. The filter now costs what the path's length costs, so serve stays able
// to answer the signal.

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Resolves with what `promise` resolves, or with `'too late'` after `ms` of real time (a guard, not a measure). */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'too late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'too late'>((resolve) => (timer = setTimeout(() => resolve('too late'), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('cliphook serve and the journal filter (issue 29 item 1)', () => {
  it('answers a 16-placeholder path filter against a long path, and then exits promptly on SIGTERM', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const served = await startServe(['--data', join(dir, 'service.json')]);
    cleanups.push(async () => {
      served.child.kill('SIGKILL');
      await served.exited;
    });
    const { url, origin, apiKey } = served.ready as { url: string; origin: string; apiKey: string };
    const auth = { authorization: `Bearer ${apiKey}` };
    expect((await fetch(`${url}/videos/${'a'.repeat(2000)}`, { headers: auth })).status).toBe(404);
    const placeholders = Array.from({ length: 16 }, (_, i) => `{p${i}}`).join('');
    const hostile = fetch(`${origin}/test_helpers/requests?path=/v1/videos/${placeholders}x`, { headers: auth, signal: AbortSignal.timeout(10_000) }).then((res) => res.status, () => 'no answer');
    expect(await hostile).toBe(200);
    served.child.kill('SIGTERM');
    expect(await within(served.exited, 10_000)).toBe(0);
  });
});
