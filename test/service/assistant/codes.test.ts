import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROBLEM_CODES } from '../../../src/protocol/problem.js';
import { ASSISTANT_CODES, assistantCodeTable } from '../../../src/service/contract/assistant.js';

// Issue 31 item 3: every code a tool can refuse with is declared in contract/: a problem code of /v1, or
// one of ASSISTANT_CODES; and each of those is answered somewhere, and documented.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DIR = join(ROOT, 'src/service/assistant');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []));
}

/** The code of every refusal the assistant's modules make: `refuse('code', …)`, and its wrappers (`no('code', …)`). */
function refusalCodes(): { where: string; code: string }[] {
  const found: { where: string; code: string }[] = [];
  for (const path of sources(DIR)) {
    const tree = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ['refuse', 'no'].includes(node.expression.text)) {
        const first = node.arguments[0];
        if (first && ts.isStringLiteralLike(first)) found.push({ where: `${relative(ROOT, path)}:${tree.getLineAndCharacterOfPosition(node.getStart()).line + 1}`, code: first.text });
      }
      ts.forEachChild(node, visit);
    };
    visit(tree);
  }
  return found;
}

describe('the refusal codes of the assistant tools (issue 31 item 3)', () => {
  const used = refusalCodes();

  it('finds the refusals (the scan reads the sources)', () => {
    expect(used.length).toBeGreaterThan(8);
  });

  it('answers only declared codes: a problem code of /v1 or one of ASSISTANT_CODES', () => {
    const undeclared = used.filter(({ code }) => !Object.hasOwn(PROBLEM_CODES, code) && !Object.hasOwn(ASSISTANT_CODES, code));
    expect(undeclared).toEqual([]);
  });

  it('declares no code twice (none of the assistant\'s own is also a problem code), and none unused', () => {
    expect(Object.keys(ASSISTANT_CODES).filter((code) => Object.hasOwn(PROBLEM_CODES, code))).toEqual([]);
    const answered = new Set(used.map(({ code }) => code));
    expect(Object.keys(ASSISTANT_CODES).filter((code) => !answered.has(code))).toEqual([]);
  });

  it('refuses max_credits with the API\'s one code for that rule, cost_exceeds_max (issue 31 item 2)', () => {
    expect(used.map(({ code }) => code)).toContain('cost_exceeds_max');
    expect(used.map(({ code }) => code)).not.toContain('max_credits_exceeded');
    expect(PROBLEM_CODES.cost_exceeds_max.status).toBe(422);
  });

  it('documents each in docs/service.md, in the table made from ASSISTANT_CODES', () => {
    const doc = readFileSync(join(ROOT, 'docs/service.md'), 'utf8');
    expect(doc).toContain(`<!-- contract:assistant-codes -->\n${assistantCodeTable()}\n<!-- /contract:assistant-codes -->`);
    for (const code of Object.keys(ASSISTANT_CODES)) expect(assistantCodeTable()).toContain(`\`${code}\``);
    expect(doc).not.toContain('max_credits_exceeded');
  });
});
