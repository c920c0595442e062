import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serve as serveCommand, type ServeCommandOptions } from '../../src/cli/commands/serve.js';
import { cli, runBin, startServe, tempDir } from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Starts `cliphook serve --json` on a free port and resolves with its ready line; stopped after the test. */
async function serve(args: string[]) {
  const started = await startServe(args);
  cleanups.push(started.stop);
  return started;
}

describe('cliphook serve', () => {
  it('prints the base URL, key, secret and balance; keeps them across a restart; stops cleanly on SIGTERM', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const data = join(dir, 'service.json');
    const first = await serve(['--data', data, '--balance', '500']);
    expect(first.ready).toMatchObject({ type: 'ready', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1$/), apiKey: expect.stringMatching(/^sk_/), webhookSecret: expect.stringMatching(/^whsec_/), balance: 500 });
    const { url, apiKey } = first.ready;
    const created = await fetch(`${url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a fox' }) });
    expect(created.status).toBe(202);
    const topped = await runBin(['service', 'top-up', '100', '--url', first.ready.origin, '--api-key', apiKey]);
    expect(topped).toMatchObject({ code: 0, stdout: 'balance: 591 credits\n' });
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    cleanups.pop();

    const second = await serve(['--data', data]);
    expect(second.ready).toMatchObject({ apiKey, webhookSecret: first.ready.webhookSecret, balance: 591 });
    const listed = (await (await fetch(`${second.ready.url}/videos`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as { total: number };
    expect(listed.total).toBe(1);
  });

  it('refuses bad flags with exit 2 naming the flag, and a held data file with exit 1', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    expect(await runBin(['serve', '--speed', 'slow', '--data', join(dir, 's.json')])).toMatchObject({ code: 2 });
    const bad = await runBin(['serve', '--api-key', 'short', '--data', join(dir, 's.json')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^cliphook: .*--api-key/);
    // Issue 20 item 6: a key a guesser could find is refused with the minimum in one line.
    const guessable = await runBin(['serve', '--api-key', 'sk_twenty_three_chars_x', '--data', join(dir, 's.json')]);
    expect(guessable.code).toBe(2);
    expect(guessable.stderr.trim().split('\n')).toHaveLength(1);
    expect(guessable.stderr).toMatch(/^cliphook: .*--api-key.*24-200 .*got 23/);
    const held = await serve(['--data', join(dir, 'held.json')]);
    const second = await runBin(['serve', '--port', '0', '--data', join(dir, 'held.json')]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/in use by process/);
    expect(held.ready.type).toBe('ready');
  });

  it('refuses a --redis that is not a redis:// URL with exit 2, and one nobody answers at with exit 1', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const bad = await runBin(['serve', '--port', '0', '--data', join(dir, 's.json'), '--redis', 'localhost:6379']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^cliphook: Expected --redis to be a redis:\/\/ or rediss:\/\/ URL/);
    // Port 1 on loopback: refused at once, nothing leaves the machine. The environment variable works too.
    const unreachable = await runBin(['serve', '--port', '0', '--data', join(dir, 's.json')], { CLIPHOOK_REDIS_URL: 'redis://127.0.0.1:1' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^cliphook: cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
  });

  it('service actions: keys, rotate-secret, advance, and a clear error for a bad key', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const { ready } = await serve(['--data', join(dir, 's.json')]);
    const flags = ['--url', ready.origin, '--api-key', ready.apiKey];
    expect((await runBin(['service', 'keys', ...flags])).stdout).toMatch(/^key_\S+ {2}sk_/);
    const created = await runBin(['service', 'keys', 'create', ...flags]);
    expect(created.stdout).toMatch(/API key\s+sk_/);
    const keyId = /created (key_\S+)/.exec(created.stdout)![1]!;
    expect((await runBin(['service', 'rotate-secret', keyId, ...flags])).stdout).toMatch(/new webhook secret of key_\S+: whsec_/);
    expect((await runBin(['service', 'advance', '60', ...flags])).stdout).toMatch(/^clock of account 1: \d{4}-/);
    expect(await runBin(['service', 'top-up', '5', '--url', ready.origin, '--api-key', 'sk_wrong_key_1'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/401 invalid_api_key/) });
    expect((await runBin(['service', 'fly', ...flags])).code).toBe(2);
  });

  // Issue 20 item 18: as the Stripe CLI finds its key in its config, `service` finds the key serve printed.
  describe('service actions with no --api-key', () => {
    const saved = process.env.CLIPHOOK_API_KEY;
    const cwd = process.cwd();
    beforeEach(() => {
      delete process.env.CLIPHOOK_API_KEY;
    });
    afterEach(() => {
      process.chdir(cwd);
      if (saved !== undefined) process.env.CLIPHOOK_API_KEY = saved;
    });

    it('find the key of a local serve in its data file (--data), also a key made since start-up', async () => {
      const [dir, cleanup] = await tempDir();
      cleanups.push(cleanup);
      const data = join(dir, 'elsewhere.json');
      const { ready } = await serve(['--data', data, '--balance', '500']);
      expect(await cli('service', 'top-up', '100', '--url', ready.origin, '--data', data)).toMatchObject({ code: 0, stdout: 'balance: 600 credits\n' });
      // A second key (journalled, not yet in a snapshot) changes nothing: the first live key is the one.
      expect((await cli('service', 'keys', 'create', '--url', ready.origin, '--data', data)).code).toBe(0);
      expect(await cli('service', 'keys', '--url', ready.origin, '--data', data)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^key_\S+ {2}sk_.*\nkey_\S+ {2}sk_/) });
      expect(await cli('service', 'top-up', '1', '--url', ready.origin, '--data', join(dir, 'none.json'))).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/^cliphook: needs --api-key <key> \(or CLIPHOOK_API_KEY\), or the data file of a local cliphook serve \(--data\): there is none at .*none\.json/),
      });
    });

    it("read serve's default data file, .cliphook/service.json, from the current folder", async () => {
      const [dir, cleanup] = await tempDir();
      cleanups.push(cleanup);
      const { ready } = await serve(['--data', join(dir, '.cliphook', 'service.json')]);
      process.chdir(dir);
      expect(await cli('service', 'advance', '60', '--url', ready.origin)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^clock of account 1: \d{4}-.*\(advanced 60 s\)\n$/) });
    });
  });
});

describe('cliphook serve --host (issue 20 item 7)', () => {
  /** Runs `serve` in process until the test ends; resolves with its stdout and stderr lines once it is ready. */
  async function inProcess(extra: Partial<ServeCommandOptions>) {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const controller = new AbortController();
    const out: string[] = [];
    const err: string[] = [];
    let ready!: () => void;
    const started = new Promise<void>((resolve) => (ready = resolve));
    const done = serveCommand({ port: '0', host: '127.0.0.1', data: join(dir, 'service.json'), speed: 'fast', json: true, inspect: false, ...extra }, {
      out: (line) => (out.push(line), ready()),
      err: (line) => void err.push(line),
      signal: controller.signal,
    });
    cleanups.push(async () => {
      controller.abort();
      await done.catch(() => undefined);
    });
    await Promise.race([started, done.catch(() => undefined)]);
    return { out, err, done, data: join(dir, 'service.json') };
  }

  it('prints the test helpers’ admin token (admin_token with --json), random unless --admin-token fixes it; a bad one is exit 2 naming the flag (issue 22)', async () => {
    const random = await inProcess({});
    const ready = JSON.parse(random.out[0]!) as { origin: string; admin_token: string };
    expect(ready.admin_token).toMatch(/^adm_/);
    expect((await fetch(`${ready.origin}/test_helpers/accounts`, { headers: { authorization: `Bearer ${ready.admin_token}` } })).status).toBe(200);
    const fixed = await inProcess({ adminToken: 'adm_fixed_for_ci_0123456789ab' });
    expect(JSON.parse(fixed.out[0]!)).toMatchObject({ admin_token: 'adm_fixed_for_ci_0123456789ab' });
    const text = await inProcess({ json: false, adminToken: 'adm_fixed_for_ci_0123456789ab' });
    expect(text.out).toContainEqual(expect.stringMatching(/^ {2}admin token {5}adm_fixed_for_ci_0123456789ab /));
    const bad = await inProcess({ adminToken: 'short' });
    await expect(bad.done).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^Expected --admin-token to be 24-200/) });
  });

  it('--seed makes a fixture at start; a file that is missing, not JSON or breaks a rule is one line, exit 2, naming the JSON Pointer (issue 22)', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const { writeFileSync } = await import('node:fs');
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ accounts: [{ name: 'alice', balance: 50 }], clips: [{ name: 'one', account: 'alice', status: 'done' }] }));
    const seeded = await inProcess({ seed: good, adminToken: 'adm_seeded_for_ci_0123456789ab' });
    const { origin } = JSON.parse(seeded.out[0]!) as { origin: string };
    const accounts = (await (await fetch(`${origin}/test_helpers/accounts`, { headers: { authorization: 'Bearer adm_seeded_for_ci_0123456789ab' } })).json()) as { data: Array<{ name: string; balance: number }> };
    expect(accounts.data).toContainEqual(expect.objectContaining({ name: 'alice', balance: 50 }));

    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ clips: [{ name: 'one', account: 'ghost', status: 'done' }] }));
    const refused = await inProcess({ seed: bad });
    await expect(refused.done).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--seed: .*bad\.json at \/clips\/0\/account: clips\[0\]\.account "ghost" is not an account/) });
    expect(existsSync(refused.data)).toBe(false);
    writeFileSync(bad, '{ nope');
    await expect((await inProcess({ seed: bad })).done).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--seed: .*bad\.json is not JSON/) });
    await expect((await inProcess({ seed: join(dir, 'missing.json') })).done).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--seed: cannot read .*missing\.json: ENOENT\.$/) });
    // Issue 29 item 10: with --strict, a loopback callback_url is refused as POST /v1/videos refuses it.
    writeFileSync(bad, JSON.stringify({ clips: [{ name: 'one', account: 'default', status: 'pending', callback_url: 'http://127.0.0.1:3000/hooks' }] }));
    const strict = await inProcess({ seed: bad, strict: true });
    await expect(strict.done).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--seed: .*bad\.json at \/clips\/0\/callback_url: callback_url must use https, got http\.$/) });
    expect(existsSync(strict.data)).toBe(false);
  });

  it('refuses a host that is not loopback without --open: exit 2 naming both, before anything is opened', async () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com']) {
      const run = await inProcess({ host });
      await expect(run.done).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(new RegExp(`^refusing to listen on ${host.replace(/\./g, '\\.')}: .*/test_helpers.*/settings.*--open`)) });
      expect(existsSync(run.data)).toBe(false);
      expect(run.out).toEqual([]);
    }
  });

  it('listens on every interface with --open, saying so on stderr at start; loopback hosts need nothing and print no warning', async () => {
    const open = await inProcess({ host: '0.0.0.0', open: true });
    expect(JSON.parse(open.out[0]!)).toMatchObject({ type: 'ready', origin: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect(open.err).toEqual([expect.stringMatching(/^warning: --open: listening on 0\.0\.0\.0, so anyone who can reach this machine can call \/test_helpers .*\/settings/)]);
    const origin = JSON.parse(open.out[0]!).origin as string;
    expect((await fetch(`${origin}/v1/pricing`)).status).toBe(200);
    for (const host of ['127.0.0.1', 'localhost', '::1']) {
      const local = await inProcess({ host });
      expect(JSON.parse(local.out[0]!).type).toBe('ready');
      expect(local.err).toEqual([]);
    }
  });
});

// Issue 22: the test helpers from the terminal, with the admin token serve printed.
describe('cliphook service: accounts, reset, seed, requests, faults, webhook-chaos', () => {
  it('runs each helper, prints lines (or --json), and refuses what cannot work with one line', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const started = await startServe(['--data', join(dir, 's.json')]);
    cleanups.push(started.stop);
    const { ready } = started;
    const admin = ['--url', ready.origin, '--admin-token', ready.admin_token as string];
    const key = ['--url', ready.origin, '--api-key', ready.apiKey];

    const made = await cli('service', 'accounts', 'create', '--name', 'alice', '--balance', '300', ...admin);
    expect(made).toMatchObject({ code: 0, stdout: expect.stringMatching(/^created account 2 \(alice\), 300 credits\n {2}API key {9}sk_\S+\n {2}webhook secret {2}whsec_/) });
    expect((await cli('service', 'accounts', ...admin)).stdout).toMatch(/^1 {2}default {2}\d+ credits {2}\(default\)\n2 {2}alice {2}300 credits\n$/);
    const listed = JSON.parse((await cli('service', 'accounts', 'list', '--json', ...admin)).stdout) as { data: unknown[] };
    expect(listed.data).toHaveLength(2);

    const fixture = join(dir, 'fixture.json');
    await writeFile(fixture, JSON.stringify({ accounts: [{ name: 'shop' }], clips: [{ name: 'intro', account: 'shop', status: 'done' }] }));
    expect(await cli('service', 'seed', fixture, ...admin)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^account shop: 3 {2}API key sk_\S+\nclip intro: \d+\n$/) });
    await writeFile(fixture, JSON.stringify({ clips: [{ name: 'x', account: 'nobody', status: 'done' }] }));
    expect(await cli('service', 'seed', fixture, ...admin)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^cliphook: 400 invalid_parameter: .*\(at \/clips\/0\/account\)\n$/) });
    expect(await cli('service', 'seed', join(dir, 'none.json'), ...admin)).toMatchObject({ code: 2, stderr: expect.stringMatching(/^cliphook: seed: cannot read/) });

    const rule = await cli('service', 'faults', 'add', '{"match":{"operation":"getAccount"},"times":1,"action":{"problem":"upstream_busy"}}', ...key);
    expect(rule).toMatchObject({ code: 0, stdout: expect.stringMatching(/^added flt_\S+: \{"operation":"getAccount","account":1\} → \{"problem":"upstream_busy"\}\n$/) });
    expect((await fetch(`${ready.url}/account`, { headers: { authorization: `Bearer ${ready.apiKey}` } })).status).toBe(503);
    expect((await cli('service', 'faults', ...key)).stdout).toMatch(/^flt_\S+ {2}.*hits 1, applied 1\n$/);
    expect(await cli('service', 'faults', 'add', '{not json', ...key)).toMatchObject({ code: 2, stderr: expect.stringMatching(/^cliphook: faults add: not valid JSON/) });
    expect(await cli('service', 'faults', 'add', '{"match":{},"action":{"problem":"nope"}}', ...key)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^cliphook: 400 invalid_parameter/) });

    const journal = await cli('service', 'requests', '--operation', 'getAccount', ...key);
    expect(journal).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\S+Z {2}account 1 {2}GET \/v1\/account {2}503 upstream_busy\n$/) });
    expect(await cli('service', 'requests', 'clear', ...admin)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^cleared \d+ journal entries\n$/) });

    expect(await cli('service', 'webhook-chaos', 'webhook_cut,webhook_late', ...key)).toMatchObject({ code: 0, stdout: 'webhook chaos of account 1: webhook_cut, webhook_late\n' });
    expect(await cli('service', 'webhook-chaos', 'none', '--account', '2', ...admin)).toMatchObject({ code: 0, stdout: 'webhook chaos of account 2: off\n' });
    expect(await cli('service', 'webhook-chaos', 'webhook_sideways', ...key)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^cliphook: 400 invalid_parameter/) });

    expect(await cli('service', 'advance', '60', '--account', '2', ...admin)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^clock of account 2: \d{4}-.*\(advanced 60 s\)\n$/) });
    expect(await cli('service', 'advance', '60', ...admin)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^clock: \d{4}-/) });
    expect(await cli('service', 'accounts', 'delete', '2', ...admin)).toMatchObject({ code: 0, stdout: 'deleted account 2\n' });
    expect(await cli('service', 'reset', ...admin)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^reset: a fresh start, clock at \d{4}-/) });
    expect((await cli('service', 'accounts', ...admin)).stdout).toMatch(/^1 {2}default/);

    // The admin helpers need the admin token: a usage error naming the flag, not a 401.
    expect(await cli('service', 'reset', ...key)).toMatchObject({ code: 2, stderr: expect.stringMatching(/^cliphook: reset needs --admin-token <token> \(or CLIPHOOK_ADMIN_TOKEN\)/) });
    expect(await cli('service', 'reset', '--url', ready.origin, '--admin-token', 'adm_wrong_token_000000000000')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^cliphook: 401/) });
    expect((await cli('service', 'accounts', 'delete', 'x', ...admin)).code).toBe(2);
  });
});
