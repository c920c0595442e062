// Issue 20 item 9: a data folder that cannot be written. A change whose write fails is not applied (503 with
// Retry-After, nothing changed in memory or on disk, so a client's retry applies it once); work that waited
// for the disk (queued changes, webhooks of clips that finished meanwhile) goes on by itself once it can.
//
// Tests run as root, whom chmod does not stop, so the disk is made to refuse writes under the test's
// folder at the file system calls the store and the outbox make (EROFS, as a read-only mount answers).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { createServiceApp, type ServiceApp } from '../../src/service/http/app.js';
import { within } from '../helpers/within.js';

const disk = vi.hoisted(() => ({ readOnly: false, under: '\0' }));
const refuse = (syscall: string, path?: string) => Object.assign(new Error(`EROFS: read-only file system, ${syscall}${path ? ` '${path}'` : ''}`), { code: 'EROFS', errno: -30, syscall });

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  // Appends to a journal opened before the disk turned read-only fail too, as on a read-only remount.
  const writeSync = ((fd: number, ...rest: unknown[]) => {
    if (disk.readOnly && fd > 2) throw refuse('write');
    return (fs.writeSync as (...args: unknown[]) => number)(fd, ...rest);
  }) as typeof fs.writeSync;
  return { ...fs, writeSync, default: { ...fs, writeSync } };
});

vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  const blocked = (path: unknown) => disk.readOnly && String(path).startsWith(disk.under);
  const open = (async (path: string, flags?: string, mode?: number) => {
    if (blocked(path) && flags !== undefined && flags !== 'r') throw refuse('open', path);
    return fs.open(path, flags, mode);
  }) as typeof fs.open;
  const rename = (async (from: string, to: string) => {
    if (blocked(to)) throw refuse('rename', to);
    return fs.rename(from, to);
  }) as typeof fs.rename;
  const writeFile = (async (path: string, ...rest: unknown[]) => {
    if (blocked(path)) throw refuse('open', path);
    return (fs.writeFile as (...args: unknown[]) => Promise<void>)(path, ...rest);
  }) as typeof fs.writeFile;
  const patched = { open, rename, writeFile };
  return { ...fs, ...patched, default: { ...fs, ...patched } };
});

const T0 = Date.parse('2026-01-01T00:00:00Z');
const apps: ServiceApp[] = [];
const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  disk.readOnly = false;
  for (const app of apps.splice(0)) await app.close();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-unwritable-'));
  dirs.push(dir);
  disk.under = dir;
  return join(dir, 'service.json');
}

async function open(file: string, start = T0) {
  const warnings: string[] = [];
  const app = await createServiceApp({ file, clock: new SimulatedClock({ frozen: true, start }), random: () => 0.5, warn: (line) => void warnings.push(line), assistant: false });
  apps.push(app);
  return { app, auth: `Bearer ${app.service.first().apiKey}`, warnings };
}

async function restart(app: ServiceApp, file: string) {
  apps.splice(apps.indexOf(app), 1);
  await app.close();
  return open(file);
}

const balanceOf = async (app: ServiceApp, auth: string) => (await request(app).get('/v1/account').set('authorization', auth)).body.balance as number;

function expectNotSaved(res: request.Response) {
  expect(res.status).toBe(503);
  expect(res.body).toMatchObject({ code: 'upstream_busy', retryable: true, retry_after: 5 });
  expect(res.headers['retry-after']).toBe('5');
}

describe('a data folder that cannot be written (issue 20 item 9)', () => {
  it('top-up: 503 with Retry-After and nothing added, in memory or after a restart; the retry once writable adds it once', async () => {
    const file = folder();
    const { app, auth } = await open(file);
    disk.readOnly = true;
    expectNotSaved(await request(app).post('/settings/top-up').set('authorization', auth).send({ credits: 500 }));
    expect(await balanceOf(app, auth)).toBe(1000);
    disk.readOnly = false;
    const again = await restart(app, file);
    expect(await balanceOf(again.app, again.auth)).toBe(1000);
    expect(await request(again.app).post('/settings/top-up').set('authorization', again.auth).send({ credits: 500 })).toMatchObject({ status: 200, body: { balance: 1500 } });
    const third = await restart(again.app, file);
    expect(await balanceOf(third.app, third.auth)).toBe(1500);
  });

  it('a failed write that is retried later by itself still leaves the top-up out: what was taken back is written taken back', async () => {
    const file = folder();
    const { app, auth } = await open(file);
    disk.readOnly = true;
    expectNotSaved(await request(app).post('/settings/top-up').set('authorization', auth).send({ credits: 500 }));
    disk.readOnly = false;
    // The store's own retry writes what was queued (the top-up's line, then the line that takes it back).
    await app.service.clock.advance(1_000);
    const again = await restart(app, file);
    expect(await balanceOf(again.app, again.auth)).toBe(1000);
  });

  it('DELETE of a queued clip and of a finished one: 503, the clip unchanged (still charged, still rendering on time), also after a restart', async () => {
    const file = folder();
    const { app, auth } = await open(file);
    const queued = (await request(app).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox' })).body;
    const finished = (await request(app).post('/v1/videos').set('authorization', auth).send({ prompt: 'an owl' })).body;
    disk.readOnly = true;
    expectNotSaved(await request(app).delete(`/v1/videos/${queued.id}`).set('authorization', auth));
    expect((await request(app).get(`/v1/videos/${queued.id}`).set('authorization', auth)).body).toMatchObject({ status: 'pending', credits_used: 9, refunded: false });
    expect(await balanceOf(app, auth)).toBe(1000 - 18);
    disk.readOnly = false;
    // The cancel was taken back whole, its timers too: the clip renders and ends as planned.
    await app.service.clock.advance(10_000);
    expect((await request(app).get(`/v1/videos/${queued.id}`).set('authorization', auth)).body).toMatchObject({ status: 'done', credits_used: 9 });
    disk.readOnly = true;
    expectNotSaved(await request(app).delete(`/v1/videos/${finished.id}`).set('authorization', auth));
    disk.readOnly = false;
    const again = await restart(app, file);
    expect((await request(again.app).get(`/v1/videos/${finished.id}`).set('authorization', again.auth)).body).toMatchObject({ status: 'done' });
    expect((await request(again.app).get(`/v1/videos/${queued.id}`).set('authorization', again.auth)).body).toMatchObject({ status: 'done', credits_used: 9 });
    expect(await balanceOf(again.app, again.auth)).toBe(1000 - 18);
  });

  it('clock advance: 503 and the clock has not moved', async () => {
    const file = folder();
    const { app, auth } = await open(file);
    disk.readOnly = true;
    expectNotSaved(await request(app).post('/test_helpers/clock/advance').set('authorization', auth).send({ seconds: 86_400 }));
    expect((await request(app).get('/test_helpers/clock').set('authorization', auth)).body.now).toBe(new Date(T0).toISOString());
  });

  it('POST /v1/videos with an Idempotency-Key: 503 and nothing charged or kept; once writable the same key makes the clip once', async () => {
    const file = folder();
    const { app, auth } = await open(file);
    const send = () => request(app).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'order-1').send({ prompt: 'a fox', model: 'cinema' });
    disk.readOnly = true;
    expectNotSaved(await send());
    expect(await balanceOf(app, auth)).toBe(1000);
    expect((await request(app).get('/v1/videos').set('authorization', auth)).body.total).toBe(0);
    disk.readOnly = false;
    const made = await send();
    expect(made.status).toBe(202);
    expect((await send()).headers['idempotent-replayed']).toBe('true');
    const again = await restart(app, file);
    expect(await balanceOf(again.app, again.auth)).toBe(1000 - 14);
    expect((await request(again.app).get('/v1/videos').set('authorization', again.auth)).body).toMatchObject({ total: 1, data: [{ id: made.body.id }] });
  });

  it('settings: a key revoked while the disk refuses stays valid; a key created is not kept', async () => {
    const file = folder();
    const { app, auth } = await open(file);
    const keyId = app.service.first().accountId && app.service.accounts.first()!.key.id;
    disk.readOnly = true;
    expectNotSaved(await request(app).delete(`/settings/keys/${keyId}`).set('authorization', auth));
    expectNotSaved(await request(app).post('/settings/keys').set('authorization', auth));
    expect((await request(app).get('/v1/account').set('authorization', auth)).status).toBe(200);
    disk.readOnly = false;
    expect((await request(app).get('/settings/keys').set('authorization', auth)).body.data).toHaveLength(1);
  });

  it('deleting an account: 503 and it keeps all it owns (its key, clip, fault rule, journal); once writable the delete takes them (issue 29 item 8)', async () => {
    const file = folder();
    const { app } = await open(file);
    const admin = `Bearer ${app.service.adminToken}`;
    const made = (await request(app).post('/test_helpers/accounts').set('authorization', admin).send({ name: 'shop' })).body as { id: number; api_key: string };
    const auth = `Bearer ${made.api_key}`;
    const clip = (await request(app).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox' })).body as { id: number };
    expect((await request(app).post('/test_helpers/faults').set('authorization', auth).send({ match: { operation: 'getAccount' }, action: { delay_ms: 1 } })).status).toBe(201);
    disk.readOnly = true;
    expectNotSaved(await request(app).delete(`/test_helpers/accounts/${made.id}`).set('authorization', admin));
    expect((await request(app).get(`/v1/videos/${clip.id}`).set('authorization', auth)).status).toBe(200);
    expect(app.service.faultRules.list({ account: made.id })).toHaveLength(1);
    expect(app.service.journal.list({ account: made.id }).length).toBeGreaterThan(0);
    disk.readOnly = false;
    expect((await request(app).delete(`/test_helpers/accounts/${made.id}`).set('authorization', admin)).status).toBe(200);
    expect(app.service.faultRules.list({ account: null }, { account: made.id })).toEqual([]);
    const again = await restart(app, file);
    expect(again.app.service.store.table('video').get(clip.id)).toBeUndefined();
  });

  it('sends the webhook of a clip that finished while the disk refused, by itself, once writes work again', async () => {
    const received: string[] = [];
    let arrive!: () => void;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push(body);
        res.writeHead(200).end();
        arrive();
      });
    });
    servers.push(receiver);
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const callback = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    const file = folder();
    const { app, auth, warnings } = await open(file);
    const clip = (await request(app).post('/v1/videos').set('authorization', auth).send({ prompt: 'a fox', callback_url: callback })).body;
    disk.readOnly = true;
    await app.service.clock.advance(10_000);
    expect(app.service.state.videos.get(clip.id)?.status).toBe('done');
    expect(received).toEqual([]);
    expect(warnings.some((line) => /cannot send the webhook of clip/.test(line))).toBe(true);
    disk.readOnly = false;
    // Time passes (the next retry slot, at most 60 s away); nothing else happens: no restart, no request.
    await app.service.clock.advance(60_000);
    await within(arrived, 10_000, 'the webhook to arrive once writes work again');
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!)).toMatchObject({ event: 'video.completed', id: clip.id, status: 'done' });
    const again = await restart(app, file);
    expect(again.app.service.state.videos.get(clip.id)).toMatchObject({ status: 'done', webhookQueued: true });
  });
});
