import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, parse, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestWebhook, type WebhookReceiver } from '../../../src/index.js';
import { SECRET, baseUrl, frameworkChecks, newReceiver, post } from './suite.js';

// Issue 32 item 3: the Next.js 16 recipes in Next.js itself. The cheapest real run found on a 2-core
// machine: one `next build` (Turbopack) of a four-route app in a temp dir, then the production server
// through Next's programmatic API (`next({ dev: false })` + `getRequestHandler()`) on node:http,
// in this process, so the routes reach the test's receiver through globalThis.
// The route files are the recipes of docs/receiver.md, except that the receiver is the test's.

const ROUTES: Record<string, string> = {
  // App Router: a route handler hands the untouched Request to receiver.fetch().
  'app/api/webhooks/route.js': 'export const POST = (req) => globalThis.__cliphookNext.receiver.fetch(req);\n',
  // The mistake there: reading the body before handing the Request over.
  'app/api/read-first/route.js':
    'export const POST = async (req) => {\n  await req.text();\n  return globalThis.__cliphookNext.receiver.fetch(req);\n};\n',
  // Pages Router: Next's body parser off, the Node handler reads the stream.
  'pages/api/pages-webhooks.js':
    'export const config = { api: { bodyParser: false } };\n' +
    'export default function handler(req, res) {\n  return globalThis.__cliphookNext.receiver.express()(req, res);\n}\n',
  // The mistake there: Next's body parser left on.
  'pages/api/pages-parsed.js': 'export default function handler(req, res) {\n  return globalThis.__cliphookNext.receiver.express()(req, res);\n}\n',
};

const shared = globalThis as typeof globalThis & { __cliphookNext?: { receiver: WebhookReceiver } };
let dir: string;
let server: Server;
let base: string;
let closeNext: () => Promise<void> = async () => {};

/** The deepest folder holding both paths: Turbopack compiles nothing outside its root, and node_modules is a symlink. */
function commonRoot(a: string, b: string): string {
  const left = a.split(sep);
  const right = b.split(sep);
  let i = 0;
  while (i < left.length && left[i] === right[i]) i++;
  return left.slice(0, i).join(sep) || parse(a).root;
}

function run(command: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, command, { cwd, env: { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`next build exited ${code}:\n${output}`))));
  });
}

beforeAll(async () => {
  const modules = realpathSync(fileURLToPath(new URL('../../../node_modules', import.meta.url)));
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'cliphook-next-')));
  symlinkSync(modules, join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'package.json'), '{ "name": "cliphook-next-recipes", "private": true }\n');
  writeFileSync(join(dir, 'next.config.mjs'), `export default { turbopack: { root: ${JSON.stringify(commonRoot(dir, modules))} } };\n`);
  for (const [file, text] of Object.entries(ROUTES)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const require = createRequire(join(dir, 'package.json'));
  await run([require.resolve('next/dist/bin/next'), 'build'], dir);
  const { default: next } = (await import(require.resolve('next'))) as { default: (options: { dev: boolean; dir: string; quiet: boolean }) => NextApp };
  const app = next({ dev: false, dir, quiet: true });
  await app.prepare();
  const handle = app.getRequestHandler();
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = baseUrl(server);
  closeNext = () => app.close();
}, 180_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await closeNext();
  delete shared.__cliphookNext;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface NextApp {
  prepare(): Promise<void>;
  getRequestHandler(): (req: unknown, res: unknown) => Promise<void>;
  close(): Promise<void>;
}

/** Hands the test's receiver to the routes. */
async function mount(receiver: WebhookReceiver, path: string) {
  shared.__cliphookNext = { receiver };
  return { url: `${base}${path}`, close: async () => {} };
}

async function parsedFirst(path: string, hint: string): Promise<void> {
  const receiver = newReceiver();
  const handler = vi.fn();
  receiver.onAny(handler);
  const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  try {
    const { url } = await mount(receiver, path);
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    const res = await post(url, hook.body, hook.headers);
    expect(res).toMatchObject({ status: 500, contentType: 'application/problem+json', body: { code: 'body_already_parsed' } });
    expect(String(res.body?.detail)).toContain(hint);
    expect(handler).not.toHaveBeenCalled();
    expect(logged.mock.calls.filter((call) => String(call[0]).includes('body_already_parsed'))).toHaveLength(1);
  } finally {
    logged.mockRestore();
  }
}

describe('Next.js App Router: export const POST = (req) => receiver.fetch(req)', () => {
  frameworkChecks((receiver) => mount(receiver, '/api/webhooks'));

  it('fails with 500 body_already_parsed, logged once, when the route read the body first', () => parsedFirst('/api/read-first', 'Pass the untouched Request'));
});

describe('Next.js Pages Router: bodyParser: false and receiver.express()', () => {
  frameworkChecks((receiver) => mount(receiver, '/api/pages-webhooks'));

  it("fails with 500 body_already_parsed naming bodyParser: false, logged once, when Next's body parser ran", () =>
    parsedFirst('/api/pages-parsed', 'bodyParser: false'));
});
