// `npm run build`, and `npm pack` / `npm publish` through `prepack` (not `prepare`, which npm would list
// as an install script in every app that installs the tarball): dist/ from src/.
//  1. dist/ is emptied first, so no file of an older build (a source map, a moved module) is shipped.
//  2. tsc emits the ESM JavaScript and its declarations (tsconfig.build.json).
//  3. The bin is made executable: `npx cliphook` runs dist/cli/bin.js as it is.
//  4. Only the declarations a consumer's TypeScript reaches from the exports map are kept (issue 29 item 15):
//     the others (the CLI's, the OAuth server's, the MCP endpoint's) name packages whose types an app has
//     not installed, and nothing can import them (the exports map stops deep imports).
//  5. The declarations are copied to dist/cjs-types/, beside a package.json of `"type": "commonjs"`: there
//     TypeScript reads them as CommonJS, which is what a CommonJS app needs under `module: node16`, where
//     an ESM declaration cannot be required (TS1479). At run time `require('cliphook')` loads the same
//     ESM files (Node >= 20.19 requires ES modules), so there is one copy of the code (issue 20 items 13, 14).
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { declarationImports, exportedTypes } from './declarations.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = `${root}dist`;
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
/**
 * Packages whose declarations are ES modules only. A CommonJS declaration may import their types only
 * with `resolution-mode: import` (TS1541/TS1542, TypeScript >= 5.3). test/package.test.ts type-checks a
 * CommonJS app against the tarball, so a package missing here fails it.
 */
const ESM_ONLY_TYPES = ['oidc-provider'];

/** A declaration as CommonJS reads it: type imports of ESM-only packages resolved as `import` would. */
function asCommonJs(text: string): string {
  for (const name of ESM_ONLY_TYPES) {
    const quoted = `'${name}'`;
    text = text
      .replaceAll(`from ${quoted};`, `from ${quoted} with { 'resolution-mode': 'import' };`)
      .replaceAll(`import(${quoted})`, `import(${quoted}, { with: { 'resolution-mode': 'import' } })`);
  }
  return text;
}

rmSync(dist, { recursive: true, force: true });
const built = spawnSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);
chmodSync(`${dist}/cli/bin.js`, 0o755);
const esmTypes = exportedTypes(root).filter((file) => !file.includes('/cjs-types/'));
const { files: reached, unresolved } = declarationImports(root, esmTypes);
if (unresolved.length > 0) throw new Error(`declarations that name a missing file: ${unresolved.join(', ')}`);
for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
  if (file.endsWith('.d.ts') && !reached.has(join(dist, file))) rmSync(join(dist, file));
}
for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.d.ts')) continue;
  const target = `${dist}/cjs-types/${file}`;
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, asCommonJs(readFileSync(`${dist}/${file}`, 'utf8')));
}
writeFileSync(`${dist}/cjs-types/package.json`, `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
