import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Accounts, type AccountTables } from '../../../../src/service/core/accounts.js';
import { Credits } from '../../../../src/service/core/credits.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { ServiceStore } from '../../../../src/service/core/store.js';
import { VideoLifecycle, type NewVideo, type Video, type VideoTables } from '../../../../src/service/resources/videos/lifecycle.js';
import type { Speed } from '../../../../src/service/core/simulate.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function setup({ speed = 'fast' as Speed, file = false as string | false, clock = new SimulatedClock({ frozen: true, start: T0 }) } = {}) {
  const store = await ServiceStore.open<AccountTables & VideoTables>({ file, tables: ['account', 'key', 'video'] });
  const accounts = new Accounts(store, () => clock.now());
  const credits = new Credits(accounts);
  const lifecycle = new VideoLifecycle({ store, accounts, credits, clock, speed, random: () => 0.5 });
  const { account, key } = accounts.first() ?? accounts.create({ balance: 100 });
  const terminal: Video[] = [];
  lifecycle.on('terminal', (video) => terminal.push({ ...video }));
  const create = (outcome: NewVideo['outcome'] = 'done', charged = 9) => {
    expect(credits.charge(account, charged)).toBeNull();
    return lifecycle.create({
      accountId: account.id, keyId: key.id, prompt: 'a fox', model: 'standard', duration: 5, ratio: '16:9', resolution: '480p',
      imageUrls: [], assetIdsUsed: null, assetSource: 'none', subjectConsent: null, callbackUrl: null, charged, retryOf: null,
      batchId: null, sticky: false, outcome,
    });
  };
  return { store, accounts, account, lifecycle, clock, terminal, create };
}

describe('VideoLifecycle: the state table of spec 3.1', () => {
  it('(none) → pending → generating → done, charged up front, each step at its planned instant', async () => {
    const { lifecycle, clock, terminal, create, account } = await setup();
    const video = create();
    expect(video).toMatchObject({ id: 1, status: 'pending', progress: null, charged: 9, refunded: false, createdAt: T0 });
    expect(account.balance).toBe(91);
    await clock.advance(video.plan.startAt - T0);
    expect(lifecycle.get(1)).toMatchObject({ status: 'generating', progress: '0%', startedAt: video.plan.startAt });
    await clock.advance(video.plan.endAt - video.plan.startAt);
    expect(lifecycle.get(1)).toMatchObject({ status: 'done', progress: '100%', completedAt: video.plan.endAt, errorCode: null });
    expect(terminal.map((v) => v.status)).toEqual(['done']);
    expect(VideoLifecycle.creditsUsed(lifecycle.get(1)!)).toBe(9);
    // Fast speed: a few seconds in all.
    expect(video.plan.endAt - T0).toBeLessThanOrEqual(6_000);
  });

  it('a new clip row holds the members of a Video, in one order, and nothing else the input carried (issue 31: one literal, no rest copy)', async () => {
    const { lifecycle, create } = await setup();
    const first = create();
    const input = {
      accountId: first.accountId, keyId: first.keyId, prompt: 'a fox', model: 'standard', duration: 5, ratio: '16:9', resolution: '480p',
      imageUrls: [], assetIdsUsed: null, assetSource: 'none', subjectConsent: null, callbackUrl: null, charged: 9, retryOf: null,
      batchId: null, sticky: false, outcome: 'done', stray: 'not a member of a clip',
    } as NewVideo;
    const second = lifecycle.create(input);
    for (const video of [first, second]) {
      expect(Object.keys(video)).toEqual([
        'accountId', 'keyId', 'prompt', 'model', 'duration', 'ratio', 'resolution', 'imageUrls', 'assetIdsUsed', 'assetSource', 'subjectConsent',
        'callbackUrl', 'charged', 'retryOf', 'batchId', 'sticky', 'id', 'status', 'progress', 'errorCode', 'refunded', 'createdAt', 'startedAt',
        'completedAt', 'retriedBy', 'plan',
      ]);
    }
  });

  it('pending or generating → error when generation fails: error_code set, credits refunded', async () => {
    const { lifecycle, clock, terminal, create, account } = await setup();
    const video = create('content_rejected');
    await clock.advance(60_000);
    expect(lifecycle.get(video.id)).toMatchObject({ status: 'error', errorCode: 'content_rejected', refunded: true, progress: null });
    expect(VideoLifecycle.creditsUsed(video)).toBe(0);
    expect(account.balance).toBe(100);
    expect(terminal.map((v) => v.errorCode)).toEqual(['content_rejected']);
  });

  it('pending → cancelled on delete, refunded; generating → 409 already_rendering, unchanged; terminal → deleted', async () => {
    const { lifecycle, clock, create, account, terminal } = await setup();
    const queued = create();
    expect(lifecycle.remove(queued)).toEqual({ action: 'cancelled', refunded: 9 });
    expect(lifecycle.get(queued.id)).toMatchObject({ status: 'cancelled', refunded: true });
    expect(account.balance).toBe(100);
    await clock.advance(60_000);
    expect(lifecycle.get(queued.id)?.status).toBe('cancelled');

    const rendering = create();
    await clock.advance(rendering.plan.startAt - clock.now());
    expect(lifecycle.remove(rendering)).toBe('already_rendering');
    expect(lifecycle.get(rendering.id)?.status).toBe('generating');
    await clock.advance(60_000);
    expect(lifecycle.get(rendering.id)?.status).toBe('done');
    expect(account.balance).toBe(91);

    expect(lifecycle.remove(lifecycle.get(rendering.id)!)).toEqual({ action: 'deleted', refunded: 0 });
    expect(lifecycle.get(rendering.id)).toBeUndefined();
    expect(lifecycle.remove(lifecycle.get(queued.id)!)).toEqual({ action: 'deleted', refunded: 0 });
    expect(terminal).toHaveLength(1);
  });

  it('moves progress in tenths at realistic speed, over 1-2 minutes', async () => {
    const { lifecycle, clock, create } = await setup({ speed: 'realistic' });
    const video = create();
    expect(video.plan.endAt - T0).toBeGreaterThanOrEqual(60_000);
    expect(video.plan.endAt - T0).toBeLessThanOrEqual(120_000);
    const seen = new Set<string | null>();
    lifecycle.on('change', (v) => seen.add(v.progress));
    await clock.advance(130_000);
    expect([...seen]).toEqual(['0%', '10%', '20%', '30%', '40%', '50%', '60%', '70%', '80%', '90%', '100%']);
  });

  it('ends a simulated upstream_timeout after the 10-minute polling time-out at realistic speed', async () => {
    const { lifecycle, clock, create } = await setup({ speed: 'realistic' });
    const video = create('upstream_timeout');
    expect(video.plan.endAt - video.plan.startAt).toBe(600_000);
    await clock.advance(video.plan.endAt - T0);
    expect(lifecycle.get(video.id)).toMatchObject({ status: 'error', errorCode: 'upstream_timeout' });
  });

  it('resumes a clip that was rendering when the service stopped: it finishes and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-lifecycle-'));
    dirs.push(dir);
    const file = join(dir, 'service.json');
    const first = await setup({ file });
    const video = first.create();
    await first.clock.advance(video.plan.startAt - T0 + 1);
    expect(first.lifecycle.get(video.id)?.status).toBe('generating');
    await first.store.commit();
    first.lifecycle.stop();
    await first.store.close();

    // Restarted an hour later: the plan's end has long passed.
    const clock = new SimulatedClock({ frozen: true, start: T0 + 3_600_000 });
    const second = await setup({ file, clock });
    second.lifecycle.resume();
    await clock.advance(0);
    expect(second.lifecycle.get(video.id)).toMatchObject({ status: 'done', completedAt: video.plan.endAt });
    expect(second.terminal.map((v) => v.id)).toEqual([video.id]);
    await second.store.close();
  });
});
