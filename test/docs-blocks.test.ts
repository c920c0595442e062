import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../src/service/contract/openapi.js';

// Every ```ts (or ```typescript) block of the README and the manual is type-checked as written: each is an
// ES module of its own, under the repository's strict compiler options, importing `cliphook`,
// `cliphook/web` and `cliphook/service` from the source and the frameworks from node_modules. Two markers
// shape how a block is read, each visible in the Markdown source:
// - a block whose first line is `// <path>.ts` is that file, so a later block can import `./<path>.js`;
// - `<!-- docs-blocks: continues the block above -->` on the line before a block checks it appended to the
//   previous block of the same document, for a block that goes on with the names the one before made.
// All blocks go through one TypeScript 7 program (one `tsc` process), so the check takes seconds.

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CONTINUES = '<!-- docs-blocks: continues the block above -->';
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];

/** One module to check: its path under the temp folder, its text, and the document line of each of its lines. */
interface Module {
  path: string;
  text: string;
  lines: Array<{ document: string; line: number }>;
}

/** The modules the blocks of one document make. */
function modulesOf(document: string): Module[] {
  const markdown = readFileSync(join(ROOT, document), 'utf8');
  const folder = document.replaceAll('/', '_');
  const modules: Module[] = [];
  for (const match of markdown.matchAll(/^```(ts|typescript)([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const fence = markdown.slice(0, match.index).split('\n').length;
    const before = markdown.slice(0, match.index).split('\n').at(-2) ?? '';
    const code = match[3]!;
    const lines = code.split('\n').slice(0, -1).map((_, index) => ({ document, line: fence + 1 + index }));
    if (before.startsWith('<!-- docs-blocks:')) {
      expect(before, `${document}:${fence - 1} is a docs-blocks marker this test knows`).toBe(CONTINUES);
      const previous = modules.at(-1);
      expect(previous, `${document}:${fence} continues a block above it`).toBeDefined();
      previous!.text += code;
      previous!.lines.push(...lines);
      continue;
    }
    const named = /^\/\/ ([\w./-]+\.ts)$/.exec(code.split('\n')[0]!)?.[1];
    const path = join(folder, named ?? `block-${fence}.ts`);
    expect(modules.map((module) => module.path), `${document}:${fence} names a file no other block names`).not.toContain(path);
    modules.push({ path, text: code, lines });
  }
  return modules;
}

/** Where Deno's globals would come from in a Deno project: only what the Deno recipe uses. */
const DENO_GLOBALS = `declare namespace Deno {
  const env: { get(key: string): string | undefined };
  function serve(handler: (request: Request) => Response | Promise<Response>): { finished: Promise<void> };
}
`;

const work = mkdtempSync(join(tmpdir(), 'cliphook-docs-blocks-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the code blocks of README.md and docs/', () => {
  it('type-check as written', async () => {
    const modules = DOCUMENTS.flatMap(modulesOf);
    expect(modules.length).toBeGreaterThan(40);
    for (const module of modules) {
      mkdirSync(join(work, dirname(module.path)), { recursive: true });
      writeFileSync(join(work, module.path), module.text);
    }
    // The README's typed-client recipe imports what openapi-typescript writes from the service's document.
    writeFileSync(join(work, 'README.md', 'service-api.d.ts'), astToString(await openapiTS(openApiDocument() as never)));
    writeFileSync(join(work, 'deno.d.ts'), DENO_GLOBALS);
    writeFileSync(join(work, 'package.json'), '{ "type": "module" }');
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
    const { compilerOptions } = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    const source = (path: string) => [join(ROOT, 'src', path)];
    const paths = { cliphook: source('index.ts'), 'cliphook/web': source('web.ts'), 'npm:cliphook/web': source('web.ts'), 'cliphook/service': source('service/index.ts') };
    writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...compilerOptions, noEmit: true, paths }, files: ['deno.d.ts', ...modules.map((module) => module.path)] }));

    const tsc = join(ROOT, 'node_modules', 'typescript-7', 'bin', 'tsc');
    const { code, output, stderr } = await promisify(execFile)(process.execPath, [tsc, '-p', join(work, 'tsconfig.json'), '--pretty', 'false'], { cwd: work }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout, stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? -1, output: error.stdout ?? '', stderr: error.stderr ?? String(error) }),
    );
    // Each error is named by the document's own line, so the failure says where to fix the Markdown.
    const byPath = new Map(modules.map((module) => [module.path, module]));
    const errors = output.split('\n').filter(Boolean).map((line) => {
      const found = /^(.+?)\((\d+),\d+\): error (TS\d+: .*)$/.exec(line);
      const at = found && byPath.get(found[1]!)?.lines[Number(found[2]) - 1];
      return at ? `${at.document}:${at.line} ${found[3]}` : line;
    });
    expect(errors).toEqual([]);
    // tsc exits non-zero only with errors; one that failed otherwise says why on stderr.
    expect(code, stderr).toBe(0);
  }, 120_000);
});
