// Issue 30 item 2: `cliphook reconcile` against the simulated service, delivering to a cliphook receiver
// and to a plain Express handler that knows nothing of cliphook.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReceiver, MemoryDeliveryStore, verifySignature, type WebhookEvent } from 'cliphook';
import { startService, type StartedService } from 'cliphook/service';
import { parseSince } from '../../src/cli/commands/reconcile.js';
import { cli } from './helpers.js';

let svc: StartedService;
const servers: Server[] = [];
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  await svc.close();
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}

/** A clip as GET /videos shows it (spec 2.1), ended `minutesAgo`. */
function listed(id: number, minutesAgo: number) {
  const at = new Date(Date.now() - minutesAgo * 60_000).toISOString();
  return {
    id, status: 'done', prompt: `clip ${id}`, video_url: `https://svc.test/v1/media/${id}.mp4`, poster_url: null, share_page_url: null, credits_used: 9, refunded: false,
    model: 'standard', duration: 5, ratio: '16:9', progress: null, error: null, error_code: null, created_at: at, completed_at: at, poll_url: `https://svc.test/v1/videos/${id}`,
  };
}

/** A service of the test's own on 127.0.0.1: GET /v1/videos answers `items` of the status asked for. */
async function listing(items: Array<Record<string, unknown>>): Promise<string> {
  const url = await listen((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const data = items.filter((item) => item.status === query.get('status'));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data, total: data.length, limit: 100, offset: 0 }));
  });
  return url.replace(/\/webhooks$/, '/v1');
}

/** An account with two done clips and one failed, none with a callback_url: no webhook ever went out. */
async function accountWithClips() {
  const account = await svc.accounts.create({ balance: 1_000 });
  const headers = { authorization: `Bearer ${account.api_key}`, 'content-type': 'application/json' };
  const ids: number[] = [];
  for (const prompt of ['a fox', 'a boat', 'x simulate:upstream_busy']) {
    const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers, body: JSON.stringify({ prompt }) });
    ids.push(((await res.json()) as { id: number }).id);
  }
  await svc.clock.advance(30_000, { account: account.id });
  return { account, ids };
}

describe('cliphook reconcile', () => {
  it('delivers each clip\'s event to a cliphook receiver, a line per clip and a summary; a second run is all duplicates', async () => {
    const { account, ids } = await accountWithClips();
    const receiver = createReceiver({ secret: account.webhook_secret, store: new MemoryDeliveryStore() });
    const handled: WebhookEvent[] = [];
    receiver.onAny((event) => void handled.push(event));
    const to = await listen(receiver.express());
    const args = ['reconcile', '--api-key', account.api_key, '--url', svc.url, '--to', to, '--secret', account.webhook_secret, '--since', '1h'];
    const first = await cli(...args);
    expect(first.code).toBe(0);
    const lines = first.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    for (const id of ids) expect(lines.some((line) => line.includes(` ${id} completed `) && line.includes('[200] delivered'))).toBe(true);
    expect(lines[3]).toMatch(/^3 clips ended since .*: 3 delivered, 0 duplicates, 0 failed$/);
    expect(handled.map((event) => event.id).sort()).toEqual([...ids].sort());
    expect(handled.find((event) => event.event === 'video.failed')).toMatchObject({ error_code: 'upstream_busy', video_url: null });

    const second = await cli(...args);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('0 delivered, 3 duplicates, 0 failed');
    expect(handled).toHaveLength(3);
  });

  it('delivers to a plain Express handler: signed as the service signs, one stable delivery id per event; a 500 exits 1', async () => {
    const { account, ids } = await accountWithClips();
    const got: Array<{ body: string; headers: Record<string, unknown> }> = [];
    let status = 204;
    const app = express();
    app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
      got.push({ body: (req.body as Buffer).toString('utf8'), headers: req.headers });
      res.status(status).end();
    });
    const to = await listen(app);
    const args = ['reconcile', '--api-key', account.api_key, '--url', svc.url, '--to', to, '--secret', account.webhook_secret, '--since', new Date(Date.now() - 3_600_000).toISOString()];
    expect((await cli(...args)).code).toBe(0);
    expect(got).toHaveLength(3);
    for (const { body, headers } of got) {
      expect(verifySignature(body, headers['x-service-signature'] as string, account.webhook_secret)).toBe(true);
      const event = JSON.parse(body) as WebhookEvent;
      expect(ids).toContain(event.id);
      expect(headers['x-service-event']).toBe(event.event);
      expect(headers['x-service-delivery']).toBe(`reconcile:${event.event}:${event.id}`);
    }
    status = 500;
    const failing = await cli(...args);
    expect(failing.code).toBe(1);
    expect(failing.stdout).toContain('0 delivered, 0 duplicates, 3 failed');
    expect(failing.stderr.trim().split('\n')).toHaveLength(1);
    expect(failing.stderr).toContain(`3 of 3 events were not acknowledged by ${to}`);
  });

  it('exits 2 with one line for missing flags, a bad --since, and a --to the guard refuses; 1 when the service refuses the key', async () => {
    const base = ['--api-key', 'sk_x', '--url', svc.url, '--secret', 'whsec_x'];
    expect(await cli('reconcile', ...base)).toMatchObject({ code: 2, stderr: expect.stringContaining('--to') });
    expect(await cli('reconcile', ...base, '--to', 'http://127.0.0.1:9/x', '--since', 'yesterday')).toMatchObject({ code: 2, stderr: expect.stringContaining('--since') });
    const privateTo = await cli('reconcile', ...base, '--to', 'https://10.0.0.8/hooks');
    expect(privateTo.code).toBe(2);
    expect(privateTo.stderr).toContain('private');
    expect((await cli('reconcile', ...base, '--to', 'http://example.com/hooks')).code).toBe(2); // http only on loopback
    const refused = await cli('reconcile', ...base, '--to', 'http://127.0.0.1:9/x');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('401 invalid_api_key');
  });

  it('a list item that makes no valid event: a failure line for it, the other clips delivered, exit 1 without a stack', async () => {
    const url = await listing([listed(1, 30), { ...listed(2, 20), credits_used: 'lots' }, listed(3, 10)]);
    const got: number[] = [];
    const to = await listen((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk)).on('end', () => {
        got.push((JSON.parse(body) as WebhookEvent).id);
        res.writeHead(200).end();
      });
    });
    const run = await cli('reconcile', '--api-key', 'sk_x', '--url', url, '--to', to, '--secret', 'whsec_x', '--since', '1h');
    expect(run.code).toBe(1);
    expect(got).toEqual([1, 3]);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(/^clip 2 .*credits_used.*skipped$/);
    expect(lines[3]).toMatch(/: 2 delivered, 0 duplicates, 0 failed, 1 malformed$/);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('1 of 3 clips made no valid event');
    expect(run.stderr).not.toContain('    at ');
  });

  it('exits 2 with one line for a plain-http --url off loopback: the API key and the unsigned clips would travel in clear', async () => {
    const args = ['--api-key', 'sk_x', '--secret', 'whsec_x', '--to', 'http://127.0.0.1:9/x'];
    for (const url of ['http://10.1.2.3/v1', 'http://api.example.com/v1']) {
      const refused = await cli('reconcile', ...args, '--url', url);
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain('--url');
      expect(refused.stderr).toContain('https');
    }
  });

  it('says what is wrong in the words of the command: a --to off the guard, an unreachable --url, a --url without /v1', async () => {
    const base = ['--api-key', 'sk_x', '--secret', 'whsec_x'];
    for (const to of ['http://10.1.2.3/hooks', 'https://10.1.2.3/hooks', 'http://example.com/hooks']) {
      const refused = await cli('reconcile', ...base, '--url', svc.url, '--to', to);
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain('--to');
      expect(refused.stderr).toContain('loopback');
      expect(refused.stderr).not.toContain('allowPrivateNetworks');
    }
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = await cli('reconcile', ...base, '--url', `http://127.0.0.1:${port}/v1`, '--to', 'http://127.0.0.1:9/x');
    expect(down.code).toBe(1);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toContain(`127.0.0.1:${port}`);
    expect(down.stderr).toContain('ECONNREFUSED');
    const noV1 = await cli('reconcile', ...base, '--url', svc.url.replace(/\/v1$/, ''), '--to', 'http://127.0.0.1:9/x');
    expect(noV1.code).toBe(1);
    expect(noV1.stderr.trim().split('\n')).toHaveLength(1);
    expect(noV1.stderr).toContain('404');
    expect(noV1.stderr).toMatch(/--url .*\/v1/);
  });

  it('parses --since as a duration back from now or an ISO time', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    expect(parseSince('3h', now)).toBe(now - 3 * 3_600_000);
    expect(parseSince('90m', now)).toBe(now - 90 * 60_000);
    expect(parseSince('2d', now)).toBe(now - 2 * 86_400_000);
    expect(parseSince('2026-11-22T09:30:00Z', now)).toBe(Date.parse('2026-11-22T09:30:00Z'));
    expect(() => parseSince('2026-11-23T00:00:00Z', now)).toThrow(/future/);
    expect(() => parseSince('3 hours', now)).toThrow(/--since/);
  });
});
