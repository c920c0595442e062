// The package's declarations as a consumer's TypeScript reads them: used by the build (scripts/build.ts),
// which ships only those reached from the exports map, and by test/package.test.ts (issue 29 item 15).
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

/** The `types` files a package.json `exports` map names, under every condition, relative to the package. */
export function exportedTypes(packageDir: string): string[] {
  const { exports } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { exports: unknown };
  const found = new Set<string>();
  const visit = (entry: unknown, key: string): void => {
    if (typeof entry === 'string') {
      if (key === 'types') found.add(entry);
    } else if (entry && typeof entry === 'object') {
      for (const [name, value] of Object.entries(entry)) visit(value, name);
    }
  };
  visit(exports, '');
  return [...found].sort();
}

/** Whether a module specifier names Node itself: `node:…` or a builtin module's bare name. */
export function isNodeBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || builtinModules.includes(specifier);
}

/** A relative specifier of a declaration file, as TypeScript resolves it to another declaration file. */
function resolveDeclaration(from: string, specifier: string): string | null {
  const base = join(dirname(from), specifier);
  const declared = base.replace(/\.(m|c)?js$/, (_js, kind: string | undefined) => `.d.${kind ?? ''}ts`);
  for (const candidate of [declared, `${base}.d.ts`, join(base, 'index.d.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * Every module a consumer's TypeScript loads from the package's declarations, starting at `entries` (the
 * `types` of its exports map unless given; issue 29 item 15), and the declaration files it reads (absolute): each non-relative specifier (`import`, `export … from`, a type-level
 * `import('…')`, a `/// <reference types>`) with the declaration files that name it. TypeScript's own
 * pre-processor reads the files, so an example in a comment is not mistaken for an import.
 */
export function declarationImports(packageDir: string, entries: readonly string[] = exportedTypes(packageDir)): { external: Map<string, string[]>; unresolved: string[]; files: Set<string> } {
  const external = new Map<string, string[]>();
  const unresolved: string[] = [];
  const seen = new Set<string>();
  const queue = entries.map((file) => join(packageDir, file));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const specifiers = [...info.importedFiles, ...info.typeReferenceDirectives].map((ref) => ref.fileName);
    for (const specifier of specifiers) {
      if (!specifier.startsWith('.')) {
        external.set(specifier, [...(external.get(specifier) ?? []), relative(packageDir, file)]);
        continue;
      }
      const target = resolveDeclaration(file, specifier);
      if (target === null) unresolved.push(`${relative(packageDir, file)} -> ${specifier}`);
      else queue.push(target);
    }
  }
  return { external, unresolved, files: seen };
}
