import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('npm start runs cliphook dev, which prints a curl whose clip\'s webhook travels service → relay → listen → receiver, and Ctrl-C exits 0', async () => {
  const [dir, cleanup] = await tempDir();
  cleanups.push(cleanup);
  // npm start runs this command; it is run here directly, so the test sees cliphook dev's own exit code
  // (npm itself, given a terminal's Ctrl-C, reports the signal whatever its child does).
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const start = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: { start: string } }).scripts.start;
  expect(start).toBe('node --import tsx src/cli/bin.ts dev');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'dev', '--port', '0', '--relay-port', '0', '--receiver-port', '0', '--data', dir], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1' },
    detached: true,
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  cleanups.push(async () => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    await exited;
  });
  let out = '';
  const seen = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(out);
        if (match) {
          child.stdout.off('data', check);
          resolve(match);
        }
      };
      child.stdout.on('data', (chunk) => {
        out += chunk;
        check();
      });
      check();
      void exited.then((code) => reject(new Error(`cliphook dev exited ${code}:\n${out}`)));
    });
  child.stderr.on('data', (chunk) => (out += chunk));
  const [, url, key, body] = await seen(/^curl -s -X POST (\S+) -H 'Authorization: Bearer (\S+)' -H 'Content-Type: application\/json' -d '(.+)'$/m);
  const created = await fetch(url!, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body! });
  expect(created.status).toBe(202);
  // The banner names the assistant endpoint too, and it answers there.
  const mcp = /^ {2}assistant (\S+)/m.exec(out)?.[1];
  expect(mcp).toBe(url!.replace(/\/v1\/videos$/, '/mcp'));
  expect((await fetch(`${mcp}/status`)).status).toBe(200);
  await seen(/receiver clip 1 is ready: 5 s, 9 credits \[dlv_\w+\]/);
  // One line per hop (the reply lines may come in either order).
  await seen(/service\s+clip 1 is done; its webhook goes to http:\/\/127\.0\.0\.1:\d+\/in\//);
  await seen(/relay\s+--> listen: video\.completed \[dlv_\w+\] sig ✓/);
  await seen(/listen\s+<-- \[200\]/);
  await seen(/emitter\s+video\.completed \[dlv_\w+\] attempt 1 → 200/);
  // A terminal's Ctrl-C: SIGINT to the whole process group.
  process.kill(-child.pid!, 'SIGINT');
  expect(await exited).toBe(0);
  expect(out).toContain('cliphook dev stopped');
});
