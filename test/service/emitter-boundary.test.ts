import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

// Issue 31 item 5: the service uses the emitter as any user does, through its public index.
describe('the service and the emitter', () => {
  it('imports nothing of the emitter but its public index', () => {
    const deep: string[] = [];
    for (const file of sources(join(root, 'src/service'))) {
      for (const [, path] of readFileSync(file, 'utf8').matchAll(/from '((?:\.\.\/)+emitter\/[^']+)'/g)) {
        if (!path!.endsWith('/emitter/index.js')) deep.push(`${relative(root, file)}: ${path}`);
      }
    }
    expect(deep).toEqual([]);
  });
});
