import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declarationImports, isNodeBuiltin } from '../scripts/declarations.js';

// The package as an app developer meets it (issue 20 items 13, 14, 17): `npm pack` here, then
// `npm install <tarball>` in a fresh app (its dependencies come from the npm registry), which has a
// CommonJS part and an ESM part, each with the package.json `type` of its own. Issue 29 item 15: the app is
// an Express 5 app first (express and @types/express installed before the tarball, as a new user's is).

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version: string; bin: Record<string, string> };
// Issue 29 item 15: a consumer type-checks with TypeScript 5.9 or with 7 (npm's `latest` since 7.0.2).
const TSC = { '5.9': `${root}node_modules/typescript/bin/tsc`, '7': `${root}node_modules/typescript-7/bin/tsc` } as const;
// Packing builds dist/ (about a minute on a busy 2-core machine) and the install fetches the dependencies.
const SLOW = 600_000;

let dir = '';
let app = '';
let installed = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cliphook-pack-'));
  // `npm pack` builds dist/ itself (prepack), as `npm publish` would.
  const packed = execFileSync('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], { cwd: root, encoding: 'utf8' });
  const tarball = join(dir, packed.trim().split('\n').at(-1)!.trim());
  app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  const install = (...names: string[]) => execFileSync('npm', ['install', ...names, '--no-audit', '--no-fund', '--loglevel=error'], { cwd: app, encoding: 'utf8' });
  install('express@^5', '@types/express', '@types/node@^20.19.0');
  install(tarball);
  installed = join(app, 'node_modules', 'cliphook');
  for (const [part, type] of [['cjs', 'commonjs'], ['esm', 'module']] as const) {
    mkdirSync(join(app, part));
    writeFileSync(join(app, part, 'package.json'), JSON.stringify({ type }));
  }
}, SLOW);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Every file of the installed package, relative to it. */
const files = () => readdirSync(installed, { recursive: true, encoding: 'utf8' });

/** Runs `node file` in the app: what it printed, as JSON. Node must print nothing else (no warning). */
function run(file: string): Record<string, unknown> {
  const { status, stdout, stderr } = spawnSync(process.execPath, [file], { cwd: app, encoding: 'utf8' });
  expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
  return JSON.parse(stdout) as Record<string, unknown>;
}

// What the app does with each entry point, the same in both module systems: a signature from the Node
// entry and from cliphook/web, and the simulated service started and asked for its prices.
const USE = `
  const body = '{"event":"video.completed"}';
  const fromNode = cliphook.sign(body, 'whsec_package');
  const fromWeb = await web.sign(body, 'whsec_package');
  const svc = await service.startService();
  const pricing = (await fetch(svc.url + '/pricing')).status;
  // Issue 31 item 5: the service's deliveries through its emitter; the internal Service is not exported.
  const deliveries = svc.emitter.list().length;
  const noService = !('Service' in service);
  await svc.close();
  const imported = await import('cliphook');
  // Issue 32: the framework adapters of a receiver, and issue 30's reconcile, in both module systems.
  const fresh = () => cliphook.createReceiver({ secret: 'whsec_package', store: new cliphook.MemoryDeliveryStore() });
  const adapters = [typeof fresh().fastify(), typeof fresh().koa({ path: '/webhooks' }), typeof fresh().hono(), typeof fresh().reconcile];
  console.log(JSON.stringify({ fromNode, fromWeb, pricing, deliveries, noService, sameModule: imported.createReceiver === cliphook.createReceiver, adapters }));
`;

// What a TypeScript app writes against the three entry points; type-checked in both parts of the app.
// Issue 29 item 15: an Express 5 app importing startService from cliphook/service, as the new user's did.
const CONSUMER = `import express from 'express';
import { createReceiver, MemoryDeliveryStore, type VideoCompletedEvent, type FastifyReceiverPlugin, type KoaMiddleware, type HonoHandler } from 'cliphook';
import { createReceiver as createWebReceiver, verifyWebhook } from 'cliphook/web';
import { startService, type FaultRule, type JournalList, type SeedFixture, type StartedService, type TestAccount } from 'cliphook/service';

const receiver = createReceiver({ secret: 'whsec_types' });
receiver.on('video.completed', async (event: VideoCompletedEvent, { deliveryId }) => {
  const url: string = event.video_url;
  console.log(url, deliveryId);
});
export const handle = (request: Request): Promise<Response> => createWebReceiver({ secret: 'whsec_types' }).fetch(request);
export const check = (body: string, headers: Headers) => verifyWebhook(body, headers, { secret: 'whsec_types' });
export const app = express();
app.post('/webhooks', receiver.express());
export const fastifyPlugin: FastifyReceiverPlugin = receiver.fastify();
export const koaMiddleware: KoaMiddleware = receiver.koa({ path: '/webhooks' });
export const honoHandler: HonoHandler = receiver.hono();
export async function deadOnes(): Promise<number> {
  const durable = createReceiver({ secret: 'whsec_types', inbox: { file: '.cliphook/inbox.json', retries: 3, concurrency: 2 } });
  durable.on('video.failed', (event, { attempt, source }) => console.log(event.error_code, attempt, source));
  return (await durable.inbox!.list({ state: 'dead', limit: 10 })).length;
}
export async function caughtUp(): Promise<number> {
  const tested = createReceiver({ secret: 'whsec_types', store: new MemoryDeliveryStore() });
  const { checked, handled, duplicates, failed } = await tested.reconcile({ apiKey: 'sk_test', baseUrl: 'http://127.0.0.1:4010/v1', since: new Date(0) });
  return checked + handled + duplicates + failed;
}
app.use(express.json());
export async function clip(): Promise<string> {
  const svc: StartedService = await startService();
  await svc.clock.advance(1000);
  const sent: number = svc.emitter.list({ limit: 10 }).length;
  await svc.close();
  return svc.url + sent;
}
export async function helpers(): Promise<number> {
  const fixture: SeedFixture = { accounts: [{ name: 'alice', balance: 500 }], clips: [{ name: 'fox', account: 'alice', status: 'done', ratio: '9:16' }] };
  const svc = await startService({ seed: fixture });
  const account: TestAccount = await svc.accounts.create({ balance: 300, name: 'bob' });
  const rule: FaultRule = await svc.faults.add({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } });
  const journal: JournalList = await svc.requests.list({ operation: 'getVideo', limit: 10 });
  const alice: number = svc.seeded!.accounts['alice']!.id + svc.seeded!.clips['fox']!;
  // @ts-expect-error a balance is a number of credits
  await svc.accounts.create({ balance: '300' });
  // @ts-expect-error a clip's status is one of the spec's
  await svc.seed({ clips: [{ name: 'owl', account: 'alice', status: 'finished' }] });
  await svc.close();
  return account.balance + rule.hits + journal.data.length + alice;
}
`;


// An app that hands cliphook its ioredis client and ioredis's own options. Checked apart, with skipLibCheck on:
// ioredis 6.1's own declarations import 'redis-errors', which ships no types (TS7016 in ioredis's .d.ts for
// any app that imports ioredis with skipLibCheck off, cliphook or not). cliphook's declarations name no
// ioredis type, so the strict check above, of an app that does not import ioredis, loads none of it.
const REDIS_CONSUMER = `import { Redis, type RedisOptions } from 'ioredis';
import { bullmqQueue, createEmitter, createReceiver, createRelayServer, RedisDeliveryStore, type BullmqQueue, type RedisClientOptions, type RelayServer } from 'cliphook';
import { createServiceApp } from 'cliphook/service';

// The Redis options are typed by cliphook's own structural types; an ioredis client and ioredis's own options
// (of the newest ioredis: the app installs it fresh) fit wherever they are taken, and a wrong value is refused.
export function onRedis(redis: Redis): { relay: RelayServer; queues: BullmqQueue[] } {
  const relay = createRelayServer({ redis, redisPrefix: 'app:relay:' });
  const options: RedisClientOptions = { host: '127.0.0.1', port: 6379, username: 'app', password: 'secret', db: 1, tls: {}, connectTimeout: 5_000 };
  const theirs: RedisOptions = { host: '127.0.0.1', port: 6379, family: 4 };
  const cloud: RedisOptions = { host: 'redis.example', port: 6380, tls: 'RedisCloudFixed' };
  const queues = [bullmqQueue({ connection: redis, prefix: 'app' }), bullmqQueue({ connection: options }), bullmqQueue({ connection: theirs }), bullmqQueue({ connection: cloud })];
  createEmitter({ queue: queues[0] });
  createReceiver({ secret: 'whsec_types', store: new RedisDeliveryStore({ redis }), inbox: { redis, prefix: 'app:inbox:' } });
  void createServiceApp({ file: false, redis, redisPrefix: 'app:service:' });
  // @ts-expect-error a port is a number
  bullmqQueue({ connection: { host: '127.0.0.1', port: '6379' } });
  // @ts-expect-error the relay needs a client, not a URL (that is redisUrl)
  createRelayServer({ redis: 'redis://127.0.0.1:6379' });
  return { relay, queues };
}
`;

/**
 * A consumer's strictest usual settings: our .d.ts files are checked too (skipLibCheck false), and with
 * them every declaration they load (Express's, Node's). TypeScript 7 includes no `@types` package on its
 * own (TS2591 on `node:http` without it), so its apps list `types: ['node']`; 5.9 loads every one installed.
 */
const compilerOptions = (resolution: 'node16' | 'bundler', version: keyof typeof TSC) => ({
  strict: true,
  noEmit: true,
  skipLibCheck: false,
  ...(version === '7' ? { types: ['node'] } : {}),
  target: 'es2022',
  ...(resolution === 'node16' ? { module: 'node16', moduleResolution: 'node16' } : { module: 'preserve', moduleResolution: 'bundler' }),
});

describe('the packed tarball, installed in a fresh app', () => {
  it('ships an executable `cliphook` bin that runs as it is', () => {
    const bin = join(installed, pkg.bin.cliphook!);
    expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    if (process.platform !== 'win32') expect(statSync(bin).mode & 0o111).toBe(0o111);
    expect(execFileSync(join(app, 'node_modules', '.bin', 'cliphook'), ['--version'], { encoding: 'utf8' }).trim()).toBe(pkg.version);
  });

  it('require()s `cliphook`, `cliphook/web` and `cliphook/service` from CommonJS: the same modules import gives', () => {
    const file = join(app, 'cjs', 'main.js');
    writeFileSync(file, `const cliphook = require('cliphook');\nconst web = require('cliphook/web');\nconst service = require('cliphook/service');\n(async () => {${USE}})();\n`);
    const out = run(file);
    expect(out).toEqual({ fromNode: expect.stringMatching(/^sha256=[0-9a-f]{64}$/), fromWeb: out.fromNode, pricing: 200, deliveries: 0, noService: true, sameModule: true, adapters: ['function', 'function', 'function', 'function'] });
  });

  it('imports the three entry points from ESM', () => {
    const file = join(app, 'esm', 'main.js');
    writeFileSync(file, `import * as cliphook from 'cliphook';\nimport * as web from 'cliphook/web';\nimport * as service from 'cliphook/service';\n${USE}\n`);
    const out = run(file);
    expect(out).toEqual({ fromNode: expect.stringMatching(/^sha256=[0-9a-f]{64}$/), fromWeb: out.fromNode, pricing: 200, deliveries: 0, noService: true, sameModule: true, adapters: ['function', 'function', 'function', 'function'] });
  });

  // Issue 20 item 14: @types/ws and @types/oidc-provider were devDependencies our .d.ts needed (TS7016),
  // and a CommonJS file under node16 could not import an ES module's declarations (TS1479). One tsc run
  // per resolution checks both parts: under node16 each file takes the module system of its package.json.
  // Issue 29 item 15: with Express 5's types installed, @types/koa (brought by @types/oidc-provider) failed
  // under skipLibCheck false (TS2694 on content-disposition's `Options`); checked by TypeScript 5.9 and 7.
  it.each([
    ['node16', '5.9'],
    ['bundler', '5.9'],
    ['node16', '7'],
    ['bundler', '7'],
  ] as const)('type-checks the CommonJS and the ESM part of an Express 5 app under moduleResolution %s with TypeScript %s', (resolution, version) => {
    for (const part of ['cjs', 'esm']) writeFileSync(join(app, part, 'use.ts'), CONSUMER);
    const config = join(app, `tsconfig.${resolution}.${version}.json`);
    writeFileSync(config, JSON.stringify({ compilerOptions: compilerOptions(resolution, version), files: ['cjs/use.ts', 'esm/use.ts'] }));
    const { status, stdout } = spawnSync(process.execPath, [TSC[version], '-p', config], { cwd: app, encoding: 'utf8' });
    expect({ status, errors: stdout }).toEqual({ status: 0, errors: '' });
    for (const part of ['cjs', 'esm']) writeFileSync(join(app, part, 'redis.ts'), REDIS_CONSUMER);
    const redisConfig = join(app, `tsconfig.redis.${resolution}.${version}.json`);
    writeFileSync(redisConfig, JSON.stringify({ compilerOptions: { ...compilerOptions(resolution, version), skipLibCheck: true }, files: ['cjs/redis.ts', 'esm/redis.ts'] }));
    const redis = spawnSync(process.execPath, [TSC[version], '-p', redisConfig], { cwd: app, encoding: 'utf8' });
    expect({ status: redis.status, errors: redis.stdout }).toEqual({ status: 0, errors: '' });
  }, SLOW);

  // Issue 29 item 15: every published .d.ts, read as TypeScript reads it (an import in a comment is no
  // import), names only our own files and Node's modules: no OAuth-server, Koa or MCP SDK type, and no zod or
  // ioredis either (the Redis options take structural types of ours, the test helpers plain types, though
  // both stay runtime dependencies). The build ships only the declarations the exports map reaches, so that
  // is every .d.ts in the package, under dist/ and dist/cjs-types/ alike.
  it('publishes declarations that name only our own and Node’s modules, each reached from the exports map', () => {
    const published = files().filter((file) => file.endsWith('.d.ts'));
    const everyFile = declarationImports(installed, published);
    const fromExports = declarationImports(installed);
    expect(published.length).toBeGreaterThan(100);
    expect(everyFile.unresolved).toEqual([]);
    expect([...fromExports.files].map((file) => relative(installed, file)).sort()).toEqual([...published].sort());
    const foreign = [...everyFile.external.keys()].filter((specifier) => !isNodeBuiltin(specifier)).sort();
    expect(foreign).toEqual([]);
    expect(published.filter((file) => file.startsWith('dist/cjs-types/')).length).toBeGreaterThan(50);
    // Issue 31 item 5: the internal Service (its stores and state machines) is no published type.
    expect(published.filter((file) => /(^|\/)service\/service\.d\.ts$/.test(file))).toEqual([]);
  });
});

// Issue 20 item 17: what the tarball holds, as it lands in an app's node_modules.
describe('the tarball’s contents', () => {

  it('has the MIT LICENSE package.json names, and no source map pointing at a src/ it does not ship', () => {
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).license).toBe('MIT');
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
    expect(files().filter((file) => file.endsWith('.map'))).toEqual([]);
    const mapped = files().filter((file) => file.endsWith('.js') && readFileSync(join(installed, file), 'utf8').includes('sourceMappingURL'));
    expect(mapped).toEqual([]);
  });

  it('resolves every relative link of its README and manual inside the package', () => {
    const pages = files().filter((file) => file.endsWith('.md') && !file.startsWith('templates'));
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/receiver.md', 'docs/service.md', 'bench/README.md']));
    const dead: string[] = [];
    for (const page of pages) {
      for (const [, target] of readFileSync(join(installed, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const path = target!.split('#')[0]!;
        if (path === '' || /^[a-z]+:/i.test(path)) continue; // an anchor on the page, or an absolute URL
        if (!existsSync(join(installed, dirname(page), path))) dead.push(`${page} -> ${target}`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('has no install script: npm runs nothing of cliphook’s in the app, and does not list it as having one', () => {
    const { scripts = {} } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    expect(Object.keys(scripts).filter((name) => /^(pre|post)?install$|^prepare$/.test(name))).toEqual([]);
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    expect(lock.packages['node_modules/cliphook']?.hasInstallScript).toBeUndefined();
  });
});
