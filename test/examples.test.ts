import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MemoryDeliveryStore } from '../src/index.js';
import { start } from '../examples/express-receiver.js';
import { POST, serve } from '../examples/fetch-receiver.js';
import worker, { seen } from '../examples/worker-receiver.js';
import { makeClip } from '../examples/service-in-tests.js';
import { completedEvent, failedEvent, signedRequest } from './helpers/webhooks.js';

describe('examples/express-receiver', () => {
  it('starts, logs a verified event, refuses a forged one', async () => {
    const lines: string[] = [];
    const app = await start({ secret: 'whsec_example', store: new MemoryDeliveryStore(), port: 0, log: (l) => lines.push(l) });
    try {
      const ok = signedRequest(completedEvent({ id: 31 }), { secret: 'whsec_example' });
      expect((await fetch(app.url, { method: 'POST', headers: ok.headers, body: ok.body })).status).toBe(200);
      const failed = signedRequest(failedEvent({ id: 32, error_code: 'content_rejected' }), { secret: 'whsec_example' });
      expect((await fetch(app.url, { method: 'POST', headers: failed.headers, body: failed.body })).status).toBe(200);
      const forged = signedRequest(completedEvent(), { secret: 'whsec_wrong' });
      expect((await fetch(app.url, { method: 'POST', headers: forged.headers, body: forged.body })).status).toBe(401);
      expect(lines[0]).toMatch(/^clip 31 is ready/);
      expect(lines[1]).toMatch(/^clip 32 failed with content_rejected/);
      expect(lines[2]).toMatch(/refused a webhook: invalid_signature/);
    } finally {
      await app.close();
    }
  });

  it('the example prints a curl command that the running example accepts', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/express-receiver.ts'], {
      env: { ...process.env, PORT: '0', SIGNING_SECRET: 'whsec_start' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          out += chunk;
          if (out.includes('cliphook trigger')) resolve();
        });
        let err = '';
        child.stderr.on('data', (chunk) => (err += chunk));
        child.once('exit', (code) => reject(new Error(`example exited with ${code}: ${err}`)));
      });
      const url = /listening on (\S+)/.exec(out)![1]!;
      const header = (name: string) => new RegExp(`-H '${name}: ([^']+)'`).exec(out)![1]!;
      const file = /--data-binary @(\S+)/.exec(out)![1]!;
      const { readFile } = await import('node:fs/promises');
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-event': header('X-Service-Event'),
          'x-service-delivery': header('X-Service-Delivery'),
          'x-service-signature': header('X-Service-Signature'),
        },
        body: await readFile(file),
      });
      expect(res.status).toBe(200);
      // SIGTERM closes it cleanly: exit 0, and the deliveries file's lock released.
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const { existsSync } = await import('node:fs');
      expect(existsSync('.cliphook/deliveries.json.lock')).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('examples/fetch-receiver', () => {
  it('POST verifies a Fetch Request, and the Node shim serves it', async () => {
    const req = signedRequest(completedEvent(), { secret: 'whsec_dev_only_change_me' });
    const direct = await POST(new Request('http://localhost/webhooks', { method: 'POST', headers: req.headers, body: req.body }));
    expect(direct.status).toBe(200);
    const server = await serve(0);
    try {
      const { port } = server.address() as { port: number };
      const again = signedRequest(completedEvent(), { secret: 'whsec_dev_only_change_me' });
      const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers: again.headers, body: again.body });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ received: true });
      const bad = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers: { ...again.headers, 'x-service-signature': 'nope' }, body: again.body });
      expect(bad.status).toBe(400);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('examples/worker-receiver (cliphook/web)', () => {
  it('verifies, dedupes and refuses as a Worker, with only the Fetch API', async () => {
    const env = { SIGNING_SECRET: 'whsec_worker' };
    const ok = signedRequest(completedEvent({ id: 41 }), { secret: 'whsec_worker' });
    const post = (body: string, headers: Record<string, string>) => worker.fetch(new Request('https://example.workers.dev/webhooks', { method: 'POST', headers, body }), env);
    expect((await post(ok.body, ok.headers)).status).toBe(200);
    expect(await (await post(ok.body, ok.headers)).json()).toEqual({ received: true, duplicate: true });
    const forged = signedRequest(completedEvent({ id: 42 }), { secret: 'whsec_wrong' });
    expect((await post(forged.body, forged.headers)).status).toBe(401);
    expect((await worker.fetch(new Request('https://example.workers.dev/'), env)).status).toBe(404);
    expect(seen).toEqual([expect.stringMatching(/^clip 41 ready: /)]);
  });
});

describe('examples/service-in-tests (cliphook/service)', () => {
  it('makes a clip against the in-process service and sees it done with a signed link', async () => {
    const clip = await makeClip('a red fox');
    expect(clip).toMatchObject({ status: 'done', credits_used: 9, video_url: expect.stringMatching(/\/v1\/media\/1\.mp4\?exp=\d+&sig=/) });
  });
});
