import { connect } from 'node:net';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, startService, type ServiceApp, type StartedService } from '../../../src/service/http/app.js';

const apps: ServiceApp[] = [];
const started: StartedService[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const svc of started.splice(0)) await svc.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function app(options: { balance?: number; file?: string } = {}) {
  const made = await createServiceApp({ file: options.file ?? false, clock: new SimulatedClock({ frozen: true }), random: () => 0.5, warn: () => undefined, ...(options.balance === undefined ? {} : { balance: options.balance }) });
  apps.push(made);
  return { app: made, auth: `Bearer ${made.service.first().apiKey}` };
}

function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let out = '';
    socket.on('data', (chunk) => (out += chunk));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

describe('the service against a stranger (review findings)', () => {
  it('answers targets that are not URLs with a problem and keeps serving', async () => {
    const svc = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    started.push(svc);
    const port = Number(new URL(svc.origin).port);
    for (const target of ['//', 'http://[']) expect(await raw(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 404 /);
    expect((await fetch(`${svc.url}/pricing`)).status).toBe(200);
  });

  it('answers a malformed percent-encoding with 404, HEAD like GET without a body, and 401 before reading a body', async () => {
    const { app: handler, auth } = await app();
    expect(await request(handler).get('/v1/videos/%E0%A4%A').set('authorization', auth)).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const head = await request(handler).head('/v1/pricing');
    expect(head.status).toBe(200);
    expect(head.text).toBeUndefined();
    const stranger = await request(handler).post('/v1/videos').set('content-type', 'application/json').send('{bad');
    expect(stranger).toMatchObject({ status: 401, body: { code: 'invalid_auth_header' } });
    const bad = await request(handler).post('/v1/videos').set('authorization', auth).set('content-type', 'application/json').send('{bad');
    expect(bad).toMatchObject({ status: 400, body: { code: 'invalid_json' } });
    expect(bad.headers['x-ratelimit-limit']).toBe('60');
    expect((await request(handler).get('/videos/1')).headers['www-authenticate']).toBe('Bearer realm="cliphook"');
  });

  it('takes the charge, the task and the key back when the write of a new task fails: 503 upstream_busy, then the same key works once', async () => {
    // On a data file: a request's unit of work writes it at its end (issue 21: the pipeline's unit, not the
    // operation, commits), and that write is the one that fails. A store in memory has no write to fail.
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-write-'));
    dirs.push(dir);
    const { app: handler, auth } = await app({ file: join(dir, 'service.json') });
    const commit = vi.spyOn(handler.service.store, 'commit').mockRejectedValueOnce(new Error('ENOSPC'));
    const failed = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-42').send({ prompt: 'a fox', model: 'cinema-fullhd', duration: 30 });
    expect(failed).toMatchObject({ status: 503, body: { code: 'upstream_busy', retryable: true, retry_after: 5 } });
    expect(failed.headers['retry-after']).toBe('5');
    commit.mockRestore();
    expect((await request(handler).get('/v1/account').set('authorization', auth)).body.balance).toBe(1000);
    expect((await request(handler).get('/v1/videos').set('authorization', auth)).body.total).toBe(0);
    const again = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-42').send({ prompt: 'a fox', model: 'cinema-fullhd', duration: 30 });
    expect(again.status).toBe(202);
    const replay = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-42').send({ prompt: 'a fox', model: 'cinema-fullhd', duration: 30 });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect((await request(handler).get('/v1/account').set('authorization', auth)).body.balance).toBe(1000 - 405);
  });

  it('keeps a task and its key together across a crash: the same key replays after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-crash-'));
    dirs.push(dir);
    const { app: handler, auth } = await app({ file: join(dir, 'a', 'service.json') });
    const first = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-9').send({ prompt: 'a fox' });
    expect(first.status).toBe(202);
    // What a crash leaves: the files as they are now.
    cpSync(join(dir, 'a'), join(dir, 'b'), { recursive: true, filter: (source) => !source.endsWith('.lock') });
    const { app: restarted } = await app({ file: join(dir, 'b', 'service.json') });
    const replay = await request(restarted).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-9').send({ prompt: 'a fox' });
    expect(replay).toMatchObject({ status: 202, body: { id: first.body.id } });
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('counts a clip in the account row it journals with the charge: after a crash, videos_created is every clip made', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-crash-'));
    dirs.push(dir);
    const { app: handler, auth } = await app({ file: join(dir, 'a', 'service.json') });
    expect((await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox' })).status).toBe(202);
    expect((await request(handler).post('/v1/videos/batch').set('authorization', auth).send({ items: [{ prompt: 'an owl' }, { prompt: 'a hare' }] })).status).toBe(207);
    expect((await request(handler).get('/v1/account').set('authorization', auth)).body.api_usage.videos_created).toBe(3);
    cpSync(join(dir, 'a'), join(dir, 'b'), { recursive: true, filter: (source) => !source.endsWith('.lock') });
    const { app: restarted } = await app({ file: join(dir, 'b', 'service.json') });
    expect((await request(restarted).get('/v1/account').set('authorization', auth)).body.api_usage).toMatchObject({ videos_created: 3 });
  });

  it('replays the first response even when it took the balance below 10', async () => {
    const { app: handler, auth } = await app({ balance: 20 });
    const first = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-7').send({ prompt: 'a fox', model: 'cinema' });
    expect(first.status).toBe(202);
    const replay = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-7').send({ prompt: 'a fox', model: 'cinema' });
    expect(replay).toMatchObject({ status: 202, body: { id: first.body.id } });
    expect((await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'another' })).body.code).toBe('insufficient_credits');
  });

  it('refuses an empty clip whose key\'s default assets are gone, instead of charging for nothing', async () => {
    const { app: handler, auth } = await app();
    const service = handler.service;
    const { account, key } = service.accounts.first()!;
    const { asset } = service.state.assets.add({ accountId: account.id, sha256: 'a'.repeat(64), name: 'x.jpg', fileSize: 1, mimeType: 'image/jpeg', ext: 'jpg', subjectConsent: 'self' });
    service.accounts.update(key, { defaultAssetIds: [asset.id] });
    service.state.assets.remove(asset);
    expect(await request(handler).post('/v1/videos').set('authorization', auth).send({})).toMatchObject({ status: 400, body: { code: 'missing_input' } });
    expect((await request(handler).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox' })).body).toMatchObject({ asset_source: 'none' });
  });
});
