import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
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
