// Issue 31 item 5: how far one request travels in the built package. V8 precise coverage (call counts, not
// blocks) over exactly one request after a warm-up, on dist/: the files of dist/ that ran and the named
// functions that ran, for POST /v1/videos with an Idempotency-Key and for MCP `tools/call create_clip` with
// an API key as bearer. The client (fetch, the MCP SDK's client) is outside dist/, so it does not count.
//   node --import tsx bench/walk.ts [--warmup 2]
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { intOption, table, target } from './lib.js';
import { code } from './parts/code.js';

const WARMUP = intOption('warmup', 'BENCH_WARMUP', 2);
const DIST = new URL('../dist/', import.meta.url).href;
const MAX_FILES = 16;

const { startService, SimulatedClock } = await code<typeof import('../src/service/index.js')>('service/index.js');

interface Walk {
  files: string[];
  functions: string[];
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

/** Lets what a request started after its answer (the journal, the store's commit) run before coverage is read. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** The files of dist/ and the named functions that ran during `once()` (coverage reset just before). */
async function walk(once: () => Promise<void>): Promise<Walk> {
  await settle();
  await session.post('Profiler.takePreciseCoverage');
  await once();
  await settle();
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const files: string[] = [];
  const functions: string[] = [];
  for (const script of result) {
    if (!script.url.startsWith(DIST)) continue;
    const ran = script.functions.filter((fn) => (fn.ranges[0]?.count ?? 0) > 0);
    if (ran.length === 0) continue;
    const file = fileURLToPath(script.url).slice(fileURLToPath(DIST).length);
    files.push(file);
    for (const fn of ran) if (fn.functionName !== '') functions.push(`${file}:${fn.functionName}`);
  }
  return { files: files.sort(), functions: functions.sort() };
}

const svc = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
let n = 0;
const post = async () => {
  const res = await fetch(`${svc.url}/videos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `walk-${++n}` },
    body: JSON.stringify({ prompt: 'a red fox in the snow', duration: 5 }),
  });
  if (res.status !== 202) throw new Error(`POST /v1/videos answered ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
};
for (let i = 0; i < WARMUP; i++) await post();
const postWalk = await walk(post);

const client = new Client({ name: 'walk', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${svc.apiKey}` } } }));
const createClip = async () => {
  // A day between calls: the clips end and the assistant's daily limit starts again, so none is refused.
  await svc.clock.advance(25 * 3_600_000);
  const result = (await client.callTool({ name: 'create_clip', arguments: { prompt: `a fox ${++n}`, duration: 5, max_credits: 100 } })) as { isError?: boolean; content: unknown };
  if (result.isError) throw new Error(`create_clip was refused: ${JSON.stringify(result.content)}`);
};
for (let i = 0; i < WARMUP; i++) await createClip();
await svc.clock.advance(25 * 3_600_000);
const mcpWalk = await walk(async () => {
  const result = (await client.callTool({ name: 'create_clip', arguments: { prompt: `a fox ${++n}`, duration: 5, max_credits: 100 } })) as { isError?: boolean; content: unknown };
  if (result.isError) throw new Error(`create_clip was refused: ${JSON.stringify(result.content)}`);
});
await client.close();
await svc.close();
session.disconnect();

const rows: Array<[string, Walk]> = [
  ['POST /v1/videos with an Idempotency-Key', postWalk],
  ['MCP tools/call create_clip (API key as bearer)', mcpWalk],
];
console.log(table(['one call (after a warm-up)', 'files of dist/ that ran', 'named functions that ran'], rows.map(([label, w]) => [label, String(w.files.length), String(w.functions.length)])));
console.log('');
for (const [label, w] of rows) console.log(target(`${label}: ≤ ${MAX_FILES} files`, w.files.length <= MAX_FILES));
if (process.argv.includes('--list')) for (const [label, w] of rows) console.error(`\n${label}\n  ${w.files.join('\n  ')}\n\n  ${w.functions.join('\n  ')}`);
