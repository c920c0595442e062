// The package's code as the benchmarks run it (not a benchmark: `bench/run.ts` reads only the top folder).
//
// Users run dist/: the JavaScript tsc emits, which `npm pack` ships and `npx cliphook` starts. The benchmarks
// measure that, built from src/ first. Run through tsx, src/ is another program: esbuild's keepNames wraps
// every function made at run time in a `__name(fn, "name")` call (an Object.defineProperty each), which made
// the relay 1.1-1.4x and `listen` up to 1.6x the CPU per event of the same code built (issue 23).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Builds dist/ from src/ (`npm run build`), once: the first process that imports this module builds and sets
 * BENCH_BUILT=1, which every process it starts inherits (`bench/run.ts` builds before the first benchmark).
 * `BENCH_SOURCE=1` measures src/ through tsx instead.
 */
export function ensureBuilt(): void {
  if (process.env.BENCH_SOURCE === '1' || process.env.BENCH_BUILT === '1') return;
  process.stderr.write('Building dist/ (npm run build): the benchmarks measure the built package.\n');
  const built = spawnSync(process.execPath, ['--import', 'tsx', `${ROOT}scripts/build.ts`], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) throw new Error(`npm run build failed (exit ${built.status}): the benchmarks measure the built package.`);
  process.env.BENCH_BUILT = '1';
}

// At import, so a benchmark has built before it starts a process of its own (which inherits BENCH_BUILT).
ensureBuilt();

/**
 * A module of the package as users run it: `code<typeof import('../src/index.js')>('index.js')` loads
 * dist/index.js (built first), or src/index.ts with BENCH_SOURCE=1.
 */
export async function code<T>(path: string): Promise<T> {
  ensureBuilt();
  const url = process.env.BENCH_SOURCE === '1' ? new URL(`../../src/${path}`, import.meta.url) : new URL(`../../dist/${path}`, import.meta.url);
  return (await import(url.href)) as T;
}
