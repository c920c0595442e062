import { afterEach, describe, expect, it, vi } from 'vitest';
import { palette } from '../../src/cli/output.js';

const tty = { isTTY: true } as NodeJS.WriteStream;
const pipe = { isTTY: false } as NodeJS.WriteStream;
const coloured = (stream: NodeJS.WriteStream) => palette(stream).red('x') !== 'x';

describe('palette', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('colours a terminal and not a pipe by default', () => {
    vi.stubEnv('NO_COLOR', undefined);
    vi.stubEnv('FORCE_COLOR', undefined);
    expect(coloured(tty)).toBe(true);
    expect(coloured(pipe)).toBe(false);
  });

  it('colours a pipe with FORCE_COLOR, but not with FORCE_COLOR=0', () => {
    vi.stubEnv('NO_COLOR', undefined);
    vi.stubEnv('FORCE_COLOR', '1');
    expect(coloured(pipe)).toBe(true);
    vi.stubEnv('FORCE_COLOR', '0');
    expect(coloured(tty)).toBe(false);
  });

  it('never colours with NO_COLOR, even when FORCE_COLOR is set too', () => {
    vi.stubEnv('NO_COLOR', '1');
    vi.stubEnv('FORCE_COLOR', '1');
    expect(coloured(tty)).toBe(false);
    expect(coloured(pipe)).toBe(false);
    expect(palette(tty).bold('-->')).toBe('-->');
  });

  it('ignores an empty NO_COLOR, as no-color.org says', () => {
    vi.stubEnv('NO_COLOR', '');
    vi.stubEnv('FORCE_COLOR', undefined);
    expect(coloured(tty)).toBe(true);
  });
});
