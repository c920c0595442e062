// Clip index (issue 29 follow-up): GET /v1/videos and GET /v1/account read the caller's clips only, found
// through `VideoLifecycle.of`, an index of the `video` table by account that the table keeps in step
// (issue 31, s5a: the index's own rules are tested in test/service/core/table.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service } from '../../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../../helpers/service-client.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const services: Service[] = [];
const clients: ServiceClient[] = [];
const dirs: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const client of clients.splice(0)) await client.close();
  for (const service of services.splice(0)) await service.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const fakeEmitter = () => ({ send: async () => undefined, stop: async () => undefined }) as unknown as WebhookEmitter;

async function open(file: string | false = false) {
  const service = await Service.open({ file, clock: new SimulatedClock({ frozen: true, start: T0 }), emitter: fakeEmitter(), random: () => 0.5 });
  services.push(service);
  const client = await serviceClient(service);
  clients.push(client);
  return { service, client };
}

const STATUSES = ['done', 'error', 'cancelled', 'pending'] as const;

/** Seeds `count` clips of `account` (made in that account when not 'default'), statuses in turn; answers their ids in order. */
async function seedClips(service: Service, account: string, count: number, prefix = 'clip'): Promise<number[]> {
  const accounts = account === 'default' ? [] : [{ name: account }];
  const clips = Array.from({ length: count }, (_, i) => {
    const status = STATUSES[i % STATUSES.length]!;
    return { name: `${prefix}${i}`, account, status, ...(status === 'error' ? { error_code: 'upstream_timeout' } : {}) };
  });
  const made = await service.seeds.run({ accounts, clips });
  return clips.map((clip) => made.clips[clip.name]!);
}

/** What a client sees of the first account's clips: every page of GET /v1/videos, and GET /v1/account's counts. */
async function seen(client: ServiceClient) {
  const all = await client.get('/videos?limit=100');
  const done = await client.get('/videos?status=done&limit=2&offset=1');
  const account = await client.get('/account');
  expect([all.status, done.status, account.status]).toEqual([200, 200, 200]);
  return {
    ids: all.body.data.map((clip: { id: number }) => clip.id) as number[],
    total: all.body.total as number,
    done: { ids: done.body.data.map((clip: { id: number }) => clip.id) as number[], total: done.body.total as number },
    usage: { inProgress: account.body.api_usage.videos_in_progress as number, creditsUsed: account.body.api_usage.credits_used as number },
  };
}

const newestFirst = (ids: number[]) => [...ids].sort((a, b) => b - a);

describe("an account's clips are found without reading other accounts' clips (clip index)", () => {
  it("GET /v1/videos and GET /v1/account read no other account's clip rows, with 1,000 clips of another account", async () => {
    const { service, client } = await open();
    await seedClips(service, 'other', 1_000, 'theirs');
    const mine = await seedClips(service, 'default', 6);
    const table = service.store.table('video');
    // Iterating the whole table is what this must not do; each row read is counted.
    const values = vi.spyOn(table, 'values').mockImplementation(() => {
      throw new Error('the whole video table was read');
    });
    const get = vi.spyOn(table, 'get');
    const view = await seen(client);
    expect(values).not.toHaveBeenCalled();
    const read = new Set(get.mock.calls.map(([id]) => id));
    for (const id of read) expect(mine).toContain(id);
    // Same answers as before: newest first, totals, status filter and paging, the account's counts.
    expect(view.ids).toEqual(newestFirst(mine));
    expect(view.total).toBe(6);
    const doneIds = newestFirst(mine.filter((_, i) => STATUSES[i % STATUSES.length] === 'done'));
    expect(view.done).toEqual({ ids: doneIds.slice(1, 3), total: doneIds.length });
    expect(view.usage.inProgress).toBe(1);
  });

  it('keeps the index right across a POST taken back after its row was put', async () => {
    const { service, client } = await open();
    const mine = await seedClips(service, 'default', 3);
    const before = await seen(client);
    const lifecycle = service.state.videos;
    const create = lifecycle.create.bind(lifecycle);
    // The clip's row is put, then the request fails: the unit of work takes it back.
    vi.spyOn(lifecycle, 'create').mockImplementationOnce((input) => {
      create(input);
      throw new Error('fails after the row was put');
    });
    const answer = await client.post('/videos', { prompt: 'a fox in the snow', model: 'cinema-480p', duration: 5 });
    expect(answer.status).toBeGreaterThanOrEqual(500);
    expect(await seen(client)).toEqual(before);
    expect(before.ids).toEqual(newestFirst(mine));
    // A clip made after it is listed, and counted.
    const made = await client.post('/videos', { prompt: 'a fox in the snow', model: 'cinema-480p', duration: 5 });
    expect(made.status).toBe(202);
    const after = await seen(client);
    expect(after.ids).toEqual([made.body.id, ...before.ids]);
    expect(after.usage.inProgress).toBe(before.usage.inProgress + 1);
  });

  it('keeps the index right across a DELETE, and a DELETE taken back after its row was removed', async () => {
    const { service, client } = await open();
    const mine = await seedClips(service, 'default', 4);
    expect((await client.delete(`/videos/${mine[0]}`)).status).toBe(200);
    const before = await seen(client);
    expect(before.ids).toEqual(newestFirst(mine.slice(1)));
    const lifecycle = service.state.videos;
    const remove = lifecycle.remove.bind(lifecycle);
    vi.spyOn(lifecycle, 'remove').mockImplementationOnce((video) => {
      remove(video);
      throw new Error('fails after the row was removed');
    });
    // mine[1] is an error clip: DELETE removes its row, then the request fails and the row comes back.
    expect((await client.delete(`/videos/${mine[1]}`)).status).toBeGreaterThanOrEqual(500);
    expect(service.store.table('video').get(mine[1]!)).toBeDefined();
    expect(await seen(client)).toEqual(before);
  });

  it('keeps the index right across an account deleted and a reset', async () => {
    const { service, client } = await open();
    const theirs = await seedClips(service, 'other', 3, 'theirs');
    const other = service.store.table('video').get(theirs[0]!)!.accountId;
    const mine = await seedClips(service, 'default', 2);
    expect(service.state.videos.of(other).map((clip) => clip.id).sort()).toEqual([...theirs].sort());
    await service.testAccounts.remove(other);
    expect(service.state.videos.of(other)).toEqual([]);
    expect((await seen(client)).ids).toEqual(newestFirst(mine));

    await service.reset();
    const fresh = await seen(client);
    expect(fresh).toMatchObject({ ids: [], total: 0, usage: { inProgress: 0, creditsUsed: 0 } });
    // Ids start again from 1 after a reset: a new clip is listed alone.
    const again = await seedClips(service, 'default', 1, 'again');
    expect((await seen(client)).ids).toEqual(again);
  });

  it('finds the same clips in a service reopened from its data file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-clip-index-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const first = await open(file);
    await seedClips(first.service, 'other', 5, 'theirs');
    const mine = await seedClips(first.service, 'default', 5);
    const before = await seen(first.client);
    await first.client.close();
    clients.splice(clients.indexOf(first.client), 1);
    await first.service.close();
    services.splice(services.indexOf(first.service), 1);

    const { client } = await open(file);
    const after = await seen(client);
    expect(after).toEqual(before);
    expect(after.ids).toEqual(newestFirst(mine));
  });
});
