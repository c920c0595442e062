import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { version } from '../../src/version.js';

const argv = (...args: string[]) => ['node', 'cliphook', ...args];

describe('cli entry', () => {
  afterEach(() => vi.restoreAllMocks());

  it('prints the version and exits 0', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await main(argv('--version'))).toBe(0);
    expect(out.mock.calls.map((c) => String(c[0])).join('')).toContain(version);
  });

  it('answers an unknown command with a one-line error, a hint and a non-zero exit', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const code = await main(argv('frobnicate'));
    expect(code).not.toBe(0);
    const text = err.mock.calls.map((c) => String(c[0])).join('');
    expect(text).toMatch(/error: /);
    expect(text).toContain('cliphook --help');
    expect(text.trim().split('\n').length).toBeLessThanOrEqual(2);
  });
});
