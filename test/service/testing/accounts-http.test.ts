import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AssistantEndpoint } from '../../../src/service/assistant/endpoint.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Table } from '../../../src/service/core/table.js';
import { createServiceApp, startService } from '../../../src/service/http/app.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 22 over HTTP: the admin token, and accounts on demand.

let service: Service;
let client: ServiceClient;
const ADMIN = 'adm_test_admin_token_0123456789';
beforeAll(async () => {
  service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), adminToken: ADMIN, balance: 700, warn: () => undefined });
  client = await serviceClient(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

describe('the admin token (issue 22)', () => {
  it('reaches the admin helpers; a missing, wrong or API key credential is a 401 problem with its challenge', async () => {
    expect(service.adminToken).toBe(ADMIN);
    expect(await client.get('/test_helpers/accounts', { key: ADMIN })).toMatchObject({ status: 200 });
    const missing = await client.get('/test_helpers/accounts', { key: null });
    expect(missing).toMatchObject({ status: 401, body: { code: 'invalid_auth_header' }, headers: { 'content-type': 'application/problem+json', 'www-authenticate': 'Bearer realm="cliphook"' } });
    expect(missing.body.detail).toMatch(/admin token/);
    expect(await client.get('/test_helpers/accounts', { key: 'adm_not_the_admin_token_000000' })).toMatchObject({ status: 401, body: { code: 'invalid_api_key', detail: 'This is not the admin token.' } });
    expect(await client.get('/test_helpers/accounts')).toMatchObject({ status: 401, body: { code: 'invalid_api_key', detail: 'This test helper takes the admin token, not an API key.' } });
    // The admin token is no API key: /v1 refuses it.
    expect(await client.get('/v1/account', { key: ADMIN })).toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
  });

  it('is a random adm_ token unless fixed, checked as an API key is, and startService answers it', async () => {
    const svc = await startService({ speed: 'fast' });
    try {
      expect(svc.adminToken).toMatch(/^adm_[A-Za-z0-9_-]{32}$/);
      const res = await fetch(`${svc.origin}/test_helpers/accounts`, { headers: { authorization: `Bearer ${svc.adminToken}` } });
      expect(res.status).toBe(200);
    } finally {
      await svc.close();
    }
    await expect(Service.open({ file: false, adminToken: 'short' })).rejects.toThrow(/adminToken/);
  });
});

describe('accounts on demand (issue 22)', () => {
  it('POST makes an account with its own key, secret and balance (the service’s starting balance by default; no body is {})', async () => {
    const made = await client.post('/test_helpers/accounts', { name: 'buyer', balance: 50 }, { key: ADMIN });
    expect(made).toMatchObject({ status: 201, body: { id: expect.any(Number), name: 'buyer', balance: 50, api_key: expect.stringMatching(/^sk_/), webhook_secret: expect.stringMatching(/^whsec_/) } });
    const plain = await client.call('POST', '/test_helpers/accounts', { key: ADMIN });
    expect(plain).toMatchObject({ status: 201, body: { name: `account_${plain.body.id}`, balance: 700 } });
    // Its key works on /v1 and sees its own account only.
    expect(await client.get('/v1/account', { key: made.body.api_key })).toMatchObject({ status: 200, body: { id: made.body.id, balance: 50 } });
  });

  it('accounts share nothing: another account’s clip is a 404', async () => {
    const a = (await client.post('/test_helpers/accounts', {}, { key: ADMIN })).body;
    const b = (await client.post('/test_helpers/accounts', {}, { key: ADMIN })).body;
    const clip = await client.post('/v1/videos', { prompt: 'a fox' }, { key: a.api_key });
    expect(clip.status).toBe(202);
    expect(await client.get(`/v1/videos/${clip.body.id}`, { key: b.api_key })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await client.get(`/v1/videos/${clip.body.id}`, { key: a.api_key })).toMatchObject({ status: 200 });
  });

  it('GET lists every account oldest first without secrets; the first is the default one', async () => {
    const list = await client.get('/test_helpers/accounts', { key: ADMIN });
    expect(list.status).toBe(200);
    expect(list.body.data[0]).toEqual({ id: 1, name: 'default', balance: 700, default: true, created_at: expect.any(String) });
    expect(list.body.data.map((account: { id: number }) => account.id)).toEqual([...list.body.data.map((account: { id: number }) => account.id)].sort((x, y) => x - y));
    expect(JSON.stringify(list.body)).not.toMatch(/sk_|whsec_/);
  });

  it('DELETE deletes an account: its key is 401 at once; unknown ids are 404, the first account stays (400)', async () => {
    const made = (await client.post('/test_helpers/accounts', { name: 'gone' }, { key: ADMIN })).body;
    expect(await client.delete(`/test_helpers/accounts/${made.id}`, { key: ADMIN })).toMatchObject({ status: 200, body: { id: made.id, deleted: true } });
    expect(await client.get('/v1/account', { key: made.api_key })).toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
    expect((await client.get('/test_helpers/accounts', { key: ADMIN })).body.data.some((account: { id: number }) => account.id === made.id)).toBe(false);
    expect(await client.delete(`/test_helpers/accounts/${made.id}`, { key: ADMIN })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await client.delete('/test_helpers/accounts/x', { key: ADMIN })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await client.delete('/test_helpers/accounts/1', { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
  });

  it('refuses a bad body with the contract’s codes', async () => {
    expect(await client.post('/test_helpers/accounts', { balance: -1 }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'balance' } });
    expect(await client.post('/test_helpers/accounts', { name: '' }, { key: ADMIN })).toMatchObject({ status: 400, body: { code: 'invalid_parameter' } });
    expect(await client.post('/test_helpers/accounts', '[1', { key: ADMIN, headers: { 'content-type': 'application/json' } })).toMatchObject({ status: 400, body: { code: 'invalid_json' } });
  });
});

describe('deleting an account removes all it owns (issue 29 item 8)', () => {
  /** The tables of a data file as they stand: its snapshot with its journal replayed (as the store loads it). */
  function dataFileTables(file: string): Record<string, Array<Record<string, unknown>>> {
    const snapshot = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { tables: Record<string, Array<Record<string, unknown>>> }) : { tables: {} };
    const tables = new Map(Object.entries(snapshot.tables).map(([name, rows]) => [name, new Map(rows.map((row) => [row.id, row]))]));
    const journal = `${file}.journal`;
    for (const line of existsSync(journal) ? readFileSync(journal, 'utf8').split('\n') : []) {
      if (line.trim() === '') continue;
      const [name, id, row] = JSON.parse(line) as [string, unknown, Record<string, unknown> | null];
      if (!tables.has(name)) tables.set(name, new Map());
      if (row === null) tables.get(name)!.delete(id);
      else tables.get(name)!.set(id, row);
    }
    return Object.fromEntries([...tables].map(([name, rows]) => [name, [...rows.values()]]));
  }

  it('its rows leave the data file, its fault rules, journal entries, clock lead and image files go; another account keeps all of its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-delete-account-'));
    const file = join(dir, 'service.json');
    // The service's own clock, which keeps each account's lead in the data file.
    const svc = await Service.open({ file, adminToken: ADMIN, rateLimitPerMinute: 1e6, warn: () => undefined });
    const http = await serviceClient(svc);
    try {
      const both = (kind: string, extra: Record<string, unknown>) => ['gone', 'kept'].map((account) => ({ name: `${kind}-${account}`, account, ...extra }));
      const seeded = (await http.post('/test_helpers/seed', {
        accounts: [{ name: 'gone' }, { name: 'kept' }],
        assets: both('asset', {}),
        clips: [...both('done', { status: 'done' }), ...both('pending', { status: 'pending' })],
        images: both('image', { status: 'done' }),
      }, { key: ADMIN })).body;
      const gone = seeded.accounts.gone as { id: number; api_key: string };
      const kept = seeded.accounts.kept as { id: number; api_key: string };
      for (const who of [gone, kept]) {
        expect((await http.post('/v1/videos', { prompt: 'a fox' }, { key: who.api_key, headers: { 'idempotency-key': `fox-${who.id}` } })).status).toBe(202);
        expect((await http.post('/test_helpers/faults', { match: { operation: 'getAccount' }, action: { delay_ms: 1 } }, { key: who.api_key })).status).toBe(201);
        expect((await http.post('/test_helpers/clock/advance', { seconds: 60, account: who.id }, { key: ADMIN })).status).toBe(200);
        const keyId = svc.accounts.keysOf(who.id)[0]!.id;
        svc.photoUploads.create({ accountId: who.id, keyId });
        await svc.store.unit(() => {
          svc.store.table('assistant').put({ id: `asst_${who.id}`, accountId: who.id, kind: 'api_key', keyId, grantId: null, clientId: null, name: 'sk_…', dailyLimit: null, createdAt: 0, disconnectedAt: null } as never);
          svc.store.table('assistant_spend').put({ id: svc.store.nextId('assistant_spend'), assistant: `asst_${who.id}`, kind: 'clip', targetId: 1, at: 0, credits: 10 } as never);
          svc.store.table('oauth').put({ id: `Grant:g${who.id}`, payload: { accountId: String(who.id), clientId: 'c' }, expiresAt: null } as never);
        });
      }
      const imageOf = async (who: { api_key: string }, id: number) => (await http.get(`/v1/images/${id}`, { key: who.api_key })).body.images[0].url as string;
      const goneImage = await imageOf(gone, seeded.images['image-gone']);
      const keptImage = await imageOf(kept, seeded.images['image-kept']);
      const fileStatus = async (url: string) => (await fetch(`${http.origin}${new URL(url).pathname}`)).status;
      expect(await fileStatus(goneImage)).toBe(200);
      expect(svc.journal.list({ account: gone.id }).length).toBeGreaterThan(0);

      expect(await http.delete(`/test_helpers/accounts/${gone.id}`, { key: ADMIN })).toMatchObject({ status: 200, body: { id: gone.id, deleted: true } });

      expect(svc.faultRules.list({ account: null }, { account: gone.id })).toEqual([]);
      expect(svc.faultRules.list({ account: null }, { account: kept.id })).toHaveLength(1);
      expect(svc.journal.list({ account: gone.id })).toEqual([]);
      expect(svc.journal.list({ account: kept.id }).length).toBeGreaterThan(0);
      expect(svc.clock.leads().has(gone.id)).toBe(false);
      expect(await fileStatus(goneImage)).toBe(404);
      expect(await fileStatus(keptImage)).toBe(200);

      const tables = dataFileTables(file);
      const owned = (id: number) => Object.entries(tables).flatMap(([name, rows]) => rows
        .filter((row) => (name === 'account' ? row.id === id : row.accountId === id) || (name === 'idempotency' && String(row.id).startsWith(`${id}:`)) || (name === 'assistant_spend' && row.assistant === `asst_${id}`) || (name === 'oauth' && (row.payload as { accountId?: string }).accountId === String(id)))
        .map((row) => `${name}:${String(row.id)}`));
      expect(owned(gone.id)).toEqual([]);
      const keptRows = owned(kept.id).map((row) => row.split(':')[0]);
      for (const table of ['account', 'key', 'video', 'asset', 'image_job', 'photo_upload', 'idempotency', 'assistant', 'assistant_spend', 'oauth']) expect(keptRows).toContain(table);
      const clock = tables.meta!.find((row) => row.id === 'clock') as { accounts?: Record<string, number> };
      expect(Object.keys(clock.accounts ?? {})).toEqual([String(kept.id)]);
    } finally {
      await http.close();
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deleting an account reads its own rows only', () => {
  it('walks no table, however many rows other accounts hold; its connections leave the connection index at once', async () => {
    const svc = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), adminToken: ADMIN, rateLimitPerMinute: 1e6, warn: () => undefined });
    const app = await createServiceApp({ service: svc, warn: () => undefined });
    const connections = (app.assistant as unknown as AssistantEndpoint).signIn.connections;
    const http = (method: 'post' | 'delete' | 'get', path: string, key: string, body?: object) => {
      const call = request(app)[method](path).set('authorization', `Bearer ${key}`);
      return body === undefined ? call : call.send(body);
    };
    try {
      const both = (kind: string, extra: Record<string, unknown>) => ['gone', 'kept'].map((account) => ({ name: `${kind}-${account}`, account, ...extra }));
      const seeded = (await http('post', '/test_helpers/seed', ADMIN, {
        accounts: [{ name: 'gone' }, { name: 'kept' }],
        assets: both('asset', {}),
        clips: [...both('pending', { status: 'pending' }), ...Array.from({ length: 300 }, (_, i) => ({ name: `many-${i}`, account: 'kept', status: 'pending' }))],
        images: both('image', { status: 'done' }),
      })).body;
      const gone = seeded.accounts.gone as { id: number; api_key: string };
      const kept = seeded.accounts.kept as { id: number; api_key: string };
      const goneConnection = connections.forKey(svc.accounts.keysOf(gone.id)[0]!);
      const keptConnection = connections.forKey(svc.accounts.keysOf(kept.id)[0]!);
      await svc.store.commit();
      const timersBefore = svc.clock.timers;

      const values = vi.spyOn(Table.prototype, 'values');
      try {
        expect((await http('delete', `/test_helpers/accounts/${gone.id}`, ADMIN)).status).toBe(200);
        expect(values.mock.contexts.map((table) => (table as Table<never>).name)).toEqual([]);
      } finally {
        values.mockRestore();
      }
      // Its rows went, its pending clip's timer with them; the other account keeps all of its own.
      for (const name of ['video', 'asset', 'image_job', 'key', 'assistant'] as const) {
        const rows = [...svc.store.table(name).values()] as Array<{ accountId: number }>;
        expect(rows.filter((row) => row.accountId === gone.id)).toEqual([]);
        expect(rows.some((row) => row.accountId === kept.id)).toBe(true);
      }
      expect(svc.clock.timers).toBe(timersBefore - 1);
      // The connection index answers without the deleted account's connection, without a restart.
      expect(connections.get(goneConnection.id)).toBeUndefined();
      expect(connections.of(gone.id)).toEqual([]);
      expect(connections.of(kept.id).map((row) => row.id)).toEqual([keptConnection.id]);
    } finally {
      await app.close();
    }
  });
});
