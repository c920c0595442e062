import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version: string; bin: Record<string, string> };

// `npm install` builds dist/ (prepare); `npx cliphook` in a clone runs the bin file itself, so it must be executable.
it('ships an executable `cliphook` bin that runs as it is', () => {
  const bin = `${root}${pkg.bin.cliphook}`;
  expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  if (process.platform !== 'win32') expect(statSync(bin).mode & 0o111).toBe(0o111);
  expect(execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()).toBe(pkg.version);
});
