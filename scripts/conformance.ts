// `node --import tsx scripts/conformance.ts [--suite-version <v>] [--node <path>]`
//
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against the assistant
// endpoint of a `startService` on 127.0.0.1: the server scenarios each protocol revision requires
// (2025-11-25 and 2026-07-28, each at its own wire), and the authorization-server scenarios against the
// service's OAuth sign-in, acting as the person on the consent page. Not part of `npm test`: the suite
// needs Node >= 22 and the npm registry. It runs on `--node <path>` (or $CONFORMANCE_NODE), on this Node
// when it is 22 or later, or else on the `node-<platform>-<arch>@22` package, installed into
// node_modules/.cache/cliphook-conformance (the system Node is not touched). Exit 0 when every scenario
// that applies passes; scripts/conformance-expected.ts names those that do not apply, and why.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startService, type StartedService } from '../src/service/http/app.js';
import { answerConsent } from '../test/service/assistant/oauth-helpers.js';
import { NOT_APPLICABLE } from './conformance-expected.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache', 'cliphook-conformance');
const RESULTS = join(CACHE, 'results');
/** The suite's release with requirement sets and the authorization-server scenarios (`latest`, 0.1.x, has neither). */
const DEFAULT_SUITE = '0.2.0-alpha.12';
const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
const run = promisify(execFile);

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

/** Installs an npm package into the cache once; returns the path of `file` inside it. */
async function installed(spec: string, dir: string, file: string): Promise<string> {
  const prefix = join(CACHE, dir);
  const path = join(prefix, 'node_modules', file);
  if (!existsSync(path)) {
    console.log(`Installing ${spec} into ${prefix}…`);
    mkdirSync(prefix, { recursive: true });
    await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, spec]);
  }
  return path;
}

/** A Node >= 22 to run the suite with. */
async function node22(): Promise<string> {
  const given = flag('--node') ?? process.env.CONFORMANCE_NODE;
  if (given) return given;
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const name = `node-${process.platform}-${process.arch}`;
  return installed(`${name}@22`, 'node22', join(name, 'bin', 'node'));
}

/**
 * The suite's server scenarios send no credentials (they are written for servers without sign-in), and
 * /mcp requires one. This proxy adds the service's API key to a request that carries none and passes the
 * rest through unchanged, `Host` and `Origin` included, so DNS rebinding is tested on the service itself.
 */
async function keyAddingProxy(svc: StartedService): Promise<{ url: string; server: Server }> {
  const target = new URL(svc.origin);
  const server = createServer((req, res) => {
    const headers = { ...req.headers, authorization: req.headers.authorization ?? `Bearer ${svc.apiKey}` };
    const upstream = request({ hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers, setHost: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://localhost:${(server.address() as AddressInfo).port}`, server };
}

/** Runs the suite's CLI. With `person`, signs in on the consent page whenever it prints an authorization URL. */
function suite(node: string, entry: string, args: string[], person?: { apiKey: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [entry, ...args], { cwd: CACHE, stdio: ['ignore', 'pipe', 'inherit'] });
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      if (!person) return;
      pending += chunk.toString('utf8');
      const url = /^(http:\/\/\S+\/oauth\/authorize\?\S+)$/m.exec(pending)?.[1];
      if (!url) return;
      pending = '';
      // What the person does in a browser: sign in with the API key, approve, and land on the callback.
      void answerConsent(new URL(url), person)
        .then(({ landed }) => fetch(landed))
        .catch((error: Error) => console.error(`conformance: the sign-in failed: ${error.message}`));
    });
    child.once('error', reject);
    // The suite's own exit code counts every scenario; which ones apply is decided from the checks below.
    child.once('close', () => resolve());
  });
}

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

/** Reads the checks of every scenario in a results folder and says what failed that should not have. */
function judge(label: string, dir: string, prefix: string): string[] {
  const problems: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const scenario = name.slice(prefix.length).replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    const checks = JSON.parse(readFileSync(join(dir, name, 'checks.json'), 'utf8')) as Check[];
    const failed = checks.filter((check) => check.status === 'FAILURE');
    const excused = NOT_APPLICABLE[scenario];
    const expected = excused ? (excused.checks ? failed.filter((check) => excused.checks!.includes(check.id)) : failed) : [];
    const unexpected = failed.filter((check) => !expected.includes(check));
    for (const check of unexpected) problems.push(`${label} ${scenario}: ${check.id} failed: ${check.errorMessage ?? ''}`);
    if (excused && failed.length === 0) problems.push(`${label} ${scenario} passes now: take it out of scripts/conformance-expected.ts`);
    if (excused?.checks) for (const id of excused.checks.filter((id) => !failed.some((check) => check.id === id))) problems.push(`${label} ${scenario}: ${id} passes now: take it out of scripts/conformance-expected.ts`);
    const warnings = checks.filter((check) => check.status === 'WARNING').map((check) => check.id);
    const verdict = unexpected.length > 0 ? 'FAIL' : excused && !excused.checks ? 'n/a ' : 'pass';
    console.log(`  ${verdict}  ${label} ${scenario}${excused?.checks ? ` (${excused.checks.length} checks n/a)` : ''}${warnings.length ? `  warnings: ${warnings.join(', ')}` : ''}`);
  }
  return problems;
}

async function main(): Promise<void> {
  const version = flag('--suite-version') ?? DEFAULT_SUITE;
  const node = await node22();
  const entry = await installed(`@modelcontextprotocol/conformance@${version}`, `suite-${version}`, join('@modelcontextprotocol', 'conformance', 'dist', 'index.js'));
  // The 2026-07-28 wire has no initialize, so each scenario's requests are real calls: a few hundred in a
  // minute from one key. The 60 a minute of spec 8 is tested by `npm test`; here it would only interrupt.
  const svc = await startService({ warn: () => undefined, rateLimitPerMinute: 10_000 });
  const proxy = await keyAddingProxy(svc);
  rmSync(RESULTS, { recursive: true, force: true });
  const problems: string[] = [];
  try {
    for (const revision of REVISIONS) {
      console.log(`\n== Server scenarios required by ${revision}, at its wire, against ${proxy.url}/mcp (the service at ${svc.origin}) ==`);
      const dir = join(RESULTS, revision);
      await suite(node, entry, ['server', '--url', `${proxy.url}/mcp`, '--requirements', revision, '--output-dir', dir]);
      problems.push(...judge(revision, dir, 'server-'));
    }

    console.log(`\n== Authorization server scenarios against ${svc.origin} ==`);
    const port = await freePort();
    const registered = await fetch(`${svc.origin}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'MCP conformance suite', redirect_uris: [`http://127.0.0.1:${port}/callback`] }),
    });
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const dir = join(RESULTS, 'authorization');
    await suite(node, entry, ['authorization', '--url', svc.origin, '--client-id', clientId, '--resource', `${svc.origin}/mcp`, '--port', String(port), '--output-dir', dir], { apiKey: svc.apiKey });
    problems.push(...judge('authorization', dir, 'authorization-server-'));
  } finally {
    proxy.server.closeAllConnections();
    proxy.server.close();
    await svc.close();
  }
  if (problems.length > 0) {
    console.error(`\nconformance: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`\nconformance: every scenario that applies passed (results in ${RESULTS}).`);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

await main();
