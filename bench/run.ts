// `npm run bench [-- <name>…] [-- --flag value …]`: runs every bench/*.ts (or the named ones) one after
// another, each in its own process, prints their tables and writes them into bench/README.md between the
// markers of each benchmark, with the date, Node version and machine. Flags are passed on to each script.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// Imported for its effect: it builds dist/ once, before any benchmark starts (each inherits BENCH_BUILT).
import './parts/code.js';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(BENCH, '..');
const README = join(BENCH, 'README.md');
const NOT_BENCHMARKS = new Set(['run', 'lib', 'top-frames']);
/** No benchmark may hold the run longer than this. */
const TIMEOUT_MS = 20 * 60 * 1000;

const available = readdirSync(BENCH)
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
  .map((file) => basename(file, '.ts'))
  .filter((name) => !NOT_BENCHMARKS.has(name))
  .sort();

const args = process.argv.slice(2);
const firstFlag = args.findIndex((arg) => arg.startsWith('--'));
const names = firstFlag < 0 ? args : args.slice(0, firstFlag);
const passOn = firstFlag < 0 ? [] : args.slice(firstFlag);
const unknown = names.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  console.error(`Unknown benchmark ${unknown.join(', ')}; available: ${available.join(', ')}.`);
  process.exit(2);
}
const selected = names.length > 0 ? names : available;

function run(name: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(BENCH, `${name}.ts`), ...passOn], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    const timer = setTimeout(() => {
      console.error(`\n${name}: no result after ${TIMEOUT_MS / 60_000} min; stopping it.`);
      child.kill();
    }, TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function machine(): string {
  const list = cpus();
  const model = (list[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim();
  return `${model}, ${list.length} cores`;
}

const start = (name: string) => `<!-- bench:${name} -->`;
const end = (name: string) => `<!-- /bench:${name} -->`;

/** Replaces the section of `name` between its markers, or appends one at the end of the results. */
function writeSection(readme: string, name: string, body: string): string {
  const section = `${start(name)}\n${body.trim()}\n${end(name)}`;
  const from = readme.indexOf(start(name));
  const to = readme.indexOf(end(name));
  if (from >= 0 && to > from) return readme.slice(0, from) + section + readme.slice(to + end(name).length);
  const results = readme.indexOf('<!-- /bench:results -->');
  if (results >= 0) return `${readme.slice(0, results)}${section}\n\n${readme.slice(results)}`;
  return `${readme.trimEnd()}\n\n## Results\n\n<!-- bench:results -->\n${section}\n\n<!-- /bench:results -->\n`;
}

const failed: string[] = [];
let readme = existsSync(README) ? readFileSync(README, 'utf8') : '# Benchmarks\n';
for (const name of selected) {
  console.log(`\n### ${name}\n`);
  const started = Date.now();
  const { code, output } = await run(name);
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) {
    // Keep the last good figures rather than a half-written table.
    console.error(`${name} failed (exit code ${code}); its section in bench/README.md is left as it was.`);
    failed.push(name);
    continue;
  }
  const stamp = `_${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · Node ${process.version} · ${machine()} · \`npm run bench -- ${[name, ...passOn].join(' ')}\` took ${seconds} s_`;
  readme = writeSection(readme, name, `### ${name}\n\n${stamp}\n\n${output.trim()}`);
  writeFileSync(README, readme);
}

if (failed.length > 0) {
  console.error(`\nFailed: ${failed.join(', ')}.`);
  process.exitCode = 1;
} else {
  console.log(`\nbench/README.md updated (${selected.join(', ')}).`);
}
