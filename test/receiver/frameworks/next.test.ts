import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, parse, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync, transformSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestWebhook, type WebhookReceiver } from '../../../src/index.js';
import { SECRET, baseUrl, frameworkChecks, newReceiver, post } from './suite.js';

// Issue 32 item 3: the Next.js 16 recipes in Next.js itself. The cheapest real run found on a 2-core
// machine: one `next build` (Turbopack) of a four-route app in a temp dir, then the production server
// through Next's programmatic API (`next({ dev: false })` + `getRequestHandler()`) on node:http,
// in this process, so the routes reach the test's receiver through globalThis.
// The route files are the recipes of docs/receiver.md, except that the receiver is the test's; and the
// recipes themselves, as the docs show them, each making its receiver from SIGNING_SECRET, which the build
// does not have (as CI builds an app without its secrets).

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

/** The docs' Next.js recipes, found by their first line, and where the test app serves each. */
const RECIPES: Record<string, string> = {
  '// app/api/webhooks/route.ts': 'app/api/recipe/route.js',
  '// pages/api/webhooks.ts': 'pages/api/recipe-pages.js',
};

/** A recipe of docs/receiver.md as written, its types stripped (the test app is JavaScript). */
function recipe(firstLine: string): string {
  const docs = readFileSync(fileURLToPath(new URL('../../../docs/receiver.md', import.meta.url)), 'utf8');
  const code = [...docs.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!).find((block) => block.startsWith(`${firstLine}\n`));
  if (code === undefined) throw new Error(`docs/receiver.md has no block starting ${firstLine}`);
  return transformSync(code, { loader: 'ts' }).code; // no format: the exports stay where Next reads them
}

/**
 * The app's node_modules: the repository's packages, and `cliphook` as an installed package would be
 * (dist/index.js beside package.json), bundled from the source, so the recipes import it by name.
 */
function installPackages(app: string, modules: string): void {
  const nodeModules = join(app, 'node_modules');
  mkdirSync(nodeModules);
  for (const name of readdirSync(modules)) symlinkSync(join(modules, name), join(nodeModules, name));
  const cliphook = join(nodeModules, 'cliphook');
  mkdirSync(join(cliphook, 'dist'), { recursive: true });
  writeFileSync(join(cliphook, 'package.json'), JSON.stringify({ name: 'cliphook', version: '0.0.0-next-test', type: 'module', exports: './dist/index.js' }));
  const entry = fileURLToPath(new URL('../../../src/index.ts', import.meta.url));
  buildSync({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', outfile: join(cliphook, 'dist', 'index.js'), logLevel: 'error' });
}

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
    // Built without the app's secret, as CI builds it: a recipe that needs it at build time fails here.
    const { SIGNING_SECRET: _secret, ...env } = process.env;
    const child = spawn(process.execPath, command, { cwd, env: { ...env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
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
  installPackages(dir, modules);
  writeFileSync(join(dir, 'package.json'), '{ "name": "cliphook-next-recipes", "private": true }\n');
  // cliphook stays a package Node loads, as Next does for packages with native or file-reading dependencies.
  writeFileSync(join(dir, 'next.config.mjs'), `export default { serverExternalPackages: ['cliphook'], turbopack: { root: ${JSON.stringify(commonRoot(dir, modules))} } };\n`);
  const routes = { ...ROUTES, ...Object.fromEntries(Object.entries(RECIPES).map(([firstLine, file]) => [file, recipe(firstLine)])) };
  for (const [file, text] of Object.entries(routes)) {
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

describe("docs/receiver.md's Next.js recipes, built without SIGNING_SECRET", () => {
  const cases: Array<[string, string]> = [['App Router', '/api/recipe'], ['Pages Router', '/api/recipe-pages']];
  for (const [router, path] of cases) {
    it(`${router}: next build passed without the secret; with it set at run time, a webhook is 200 and its copy a duplicate`, async () => {
      const before = process.env.SIGNING_SECRET;
      process.env.SIGNING_SECRET = SECRET;
      const logged = vi.spyOn(console, 'log').mockImplementation(() => undefined);
      try {
        const hook = createTestWebhook('video.completed', { secret: SECRET });
        expect(await post(`${base}${path}`, hook.body, hook.headers)).toMatchObject({ status: 200, body: { received: true } });
        const again = await post(`${base}${path}`, hook.body, hook.headers);
        expect(again).toMatchObject({ status: 200, body: { received: true, duplicate: true } });
        // The recipe's handler ran once, for this event.
        expect(logged.mock.calls.filter((call) => call[0] === hook.event.id)).toEqual([[hook.event.id, hook.event.video_url]]);
      } finally {
        logged.mockRestore();
        if (before === undefined) delete process.env.SIGNING_SECRET;
        else process.env.SIGNING_SECRET = before;
      }
    });
  }
});
