import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../../..');
const service = join(root, 'src/service');
const testing = join(service, 'testing') + sep;

/**
 * Issue 31 item 5: the composition root plugs the test helpers in (their routes, the runner's two steps,
 * the seed); nothing else of the service imports testing/.
 */
const COMPOSITION_ROOT = new Map([
  ['src/service/service.ts', 'builds the journal, fault rules, chaos and the helpers’ commands'],
  ['src/service/options.ts', 'the `seed` option’s type, and the chaos the default emitter wraps'],
  ['src/service/http/app.ts', 'plugs the journal and fault steps into the chain, and the in-process helpers into startService'],
  ['src/service/contract/routes.ts', 'the one route table the document, the router and the client are made from takes the /test_helpers routes (SERVED_TEST_HELPER_ROUTES) as one spread'],
  ['src/service/index.ts', 'the package entry re-exports the helpers’ public types (TestHelpers, JournalFilter)'],
  ['src/service/http/public.ts', 'the published types of startService’s handle: its helpers, the seed’s answer'],
]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Every module a file names: imports, `export … from`, `import()` and `import type`, read by the TypeScript parser. */
function specifiers(file: string, text = readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) found.push(node.arguments[0].text);
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) found.push(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The files of src/service outside testing/ that import something of testing/. */
function importersOfTesting(): Map<string, string[]> {
  const importers = new Map<string, string[]>();
  for (const file of sources(service)) {
    if (file.startsWith(testing)) continue;
    const named = specifiers(file).filter((spec) => spec.startsWith('.') && resolve(dirname(file), spec).startsWith(testing));
    if (named.length > 0) importers.set(relative(root, file).split(sep).join('/'), named);
  }
  return importers;
}

describe('the test helpers are one folder that plugs in (issue 31 item 5)', () => {
  it('is imported by the composition root only', () => {
    const importers = importersOfTesting();
    const strays = [...importers].filter(([file]) => !COMPOSITION_ROOT.has(file)).map(([file, named]) => `${file}: ${named.join(', ')}`);
    expect(strays, 'production paths do not import src/service/testing/: take the collaborator from the composition root').toEqual([]);
  });

  it('finds an import of testing/ however it is written', () => {
    const dir = join(service, 'testing');
    const probe = join(service, 'core', 'probe.ts');
    const text = `import type { A } from '../testing/a.js';\nexport { b } from '../testing/b.js';\nconst c = await import('../testing/c.js');\ntype D = import('../testing/d.js').D;\nimport { e } from './e.js';`;
    const found = specifiers(probe, text);
    expect(found.filter((spec) => resolve(dirname(probe), spec).startsWith(dir + sep))).toEqual(['../testing/a.js', '../testing/b.js', '../testing/c.js', '../testing/d.js']);
  });
});
