import { readFile, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { cli, tempDir } from './helpers.js';

// `cliphook service …` where it goes wrong before the service answers (issue 29 item 18); what it does
// against a running serve is in serve.test.ts.

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback port nothing listens on: one the system gave, closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('cliphook service: usage', () => {
  it.each(['advance', 'top-up'])('%s with no number is one usage line and exit 2, not "got undefined"', async (action) => {
    const { code, stdout, stderr } = await cli('service', action, '--url', 'http://127.0.0.1:1', '--api-key', 'sk_test');
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).not.toContain('undefined');
    expect(stderr).toMatch(new RegExp(`^cliphook: usage: cliphook service ${action} <(seconds|credits)> .+\\n$`));
  });

  it('advance with something that is not a number names what it got', async () => {
    const { code, stderr } = await cli('service', 'advance', 'soon', '--url', 'http://127.0.0.1:1', '--api-key', 'sk_test');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^cliphook: advance needs a number of seconds, got "soon"\.\n$/);
  });
});

describe('cliphook service: nothing listening at --url', () => {
  it('names the refused connection and suggests `cliphook serve` or --url, for every action, exit 1', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const fixture = join(dir, 'seed.json');
    await writeFile(fixture, '{"accounts":{"shop":{}}}');
    const port = await closedPort();
    const flags = ['--url', `http://127.0.0.1:${port}`, '--api-key', 'sk_test', '--admin-token', 'adm_test'];
    const actions = [
      ['top-up', '5'], ['keys'], ['keys', 'create'], ['keys', 'revoke', 'key_1'], ['rotate-secret', 'key_1'], ['advance', '60'],
      ['accounts'], ['accounts', 'create'], ['accounts', 'delete', '2'], ['reset'], ['seed', fixture], ['requests'], ['requests', 'clear'],
      ['faults'], ['faults', 'add', '{"match":{"operation":"getAccount"},"action":{"problem":"upstream_busy"}}'], ['faults', 'delete', 'flt_1'],
      ['webhook-chaos', 'none'],
    ];
    for (const action of actions) {
      const { code, stdout, stderr } = await cli('service', ...action, ...flags);
      expect({ action, code, stdout }).toEqual({ action, code: 1, stdout: '' });
      expect(stderr).not.toContain('fetch failed');
      expect(stderr).toBe(
        `cliphook: cannot reach the service at http://127.0.0.1:${port}: connection refused, nothing listens there. ` +
          'Start it with `cliphook serve`, or give the URL it printed with --url (or CLIPHOOK_SERVICE_URL).\n',
      );
    }
  });
});

describe('cliphook service: the client typed from the contract (issue 31 item 4)', () => {
  it('writes no route path of its own: every path comes from contract/routes.ts', async () => {
    const source = await readFile(fileURLToPath(new URL('../../src/cli/commands/service.ts', import.meta.url)), 'utf8');
    expect(source.match(/['`"]\/(settings|test_helpers|v1)\b[^'`"]*/g) ?? []).toEqual([]);
  });

  it('sends each action to its operation, with the credential its route takes, and prints the problem it gets', async () => {
    const [dir, cleanup] = await tempDir();
    cleanups.push(cleanup);
    const fixture = join(dir, 'seed.json');
    await writeFile(fixture, '{"accounts":{"shop":{}}}');
    const seen: string[] = [];
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        seen.push(`${req.method} ${req.url} ${req.headers.authorization} ${body}`.trim());
        res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ code: 'not_found', detail: 'Nothing here.', pointer: '/x' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
    const { port } = server.address() as { port: number };
    const flags = ['--url', `http://127.0.0.1:${port}/v1/`, '--api-key', 'sk_k', '--admin-token', 'adm_a'];
    const cases: [string[], string][] = [
      [['top-up', '5'], 'POST /settings/top-up Bearer sk_k {"credits":5}'],
      [['keys'], 'GET /settings/keys Bearer sk_k'],
      [['keys', 'create'], 'POST /settings/keys Bearer sk_k'],
      [['keys', 'revoke', 'key_a/b'], 'DELETE /settings/keys/key_a%2Fb Bearer sk_k'],
      [['rotate-secret', 'key_1'], 'POST /settings/keys/key_1/rotate-secret Bearer sk_k'],
      [['advance', '60', '--account', '2'], 'POST /test_helpers/clock/advance Bearer adm_a {"seconds":60,"account":2}'],
      [['accounts'], 'GET /test_helpers/accounts Bearer adm_a'],
      [['accounts', 'create', '--name', 'al', '--balance', '3'], 'POST /test_helpers/accounts Bearer adm_a {"name":"al","balance":3}'],
      [['accounts', 'delete', '2'], 'DELETE /test_helpers/accounts/2 Bearer adm_a'],
      [['reset'], 'POST /test_helpers/reset Bearer adm_a'],
      [['seed', fixture], 'POST /test_helpers/seed Bearer adm_a {"accounts":{"shop":{}}}'],
      [['requests', '--operation', 'getAccount', '--limit', '5', '--account', '2'], 'GET /test_helpers/requests?operation=getAccount&limit=5&account=2 Bearer adm_a'],
      [['requests', 'clear'], 'DELETE /test_helpers/requests Bearer adm_a'],
      [['faults', '--account', '3'], 'GET /test_helpers/faults?account=3 Bearer adm_a'],
      [['faults', 'add', '{"match":{},"action":{"problem":"upstream_busy"}}'], 'POST /test_helpers/faults Bearer adm_a {"match":{},"action":{"problem":"upstream_busy"}}'],
      [['faults', 'delete', 'flt_1'], 'DELETE /test_helpers/faults/flt_1 Bearer adm_a'],
      [['webhook-chaos', 'webhook_cut, webhook_late'], 'POST /test_helpers/webhook_chaos Bearer adm_a {"modes":["webhook_cut","webhook_late"]}'],
    ];
    for (const [action, sent] of cases) {
      const { code, stdout, stderr } = await cli('service', ...action, ...flags);
      expect({ action, code, stdout, stderr }).toEqual({ action, code: 1, stdout: '', stderr: 'cliphook: 404 not_found: Nothing here. (at /x)\n' });
      expect(seen.pop()).toBe(sent);
    }
    // Each action sent exactly one request.
    expect(seen).toEqual([]);
  });
});
