import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Issue 31 item 5: the assistant endpoint and its tools take the few parts they use (assistant/parts.ts), not
// the whole `Service`: no module of src/service/assistant/ imports the `Service` class or its type.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []));
}

describe('the assistant takes narrow parts (issue 31 item 5)', () => {
  it('imports nothing of service.ts but the data file\'s table types', () => {
    const found: string[] = [];
    for (const path of sources(join(ROOT, 'src/service/assistant'))) {
      const tree = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
      for (const statement of tree.statements) {
        if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier) || !/\/service\.js$/.test(statement.moduleSpecifier.text)) continue;
        const names = statement.importClause?.namedBindings && ts.isNamedImports(statement.importClause.namedBindings) ? statement.importClause.namedBindings.elements.map((element) => element.name.text) : ['*'];
        for (const name of names) found.push(`${relative(ROOT, path)}: ${name}`);
      }
    }
    expect(found).toEqual(['src/service/assistant/parts.ts: ServiceTables']);
  });
});
