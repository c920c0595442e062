import { describe, expect, it, vi } from 'vitest';
import { Accounts, type AccountTables } from '../../../../src/service/core/accounts.js';
import { Credits } from '../../../../src/service/core/credits.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { ImageJobs } from '../../../../src/service/resources/images/jobs.js';
import { animateOf, JOB_WINDOW_MS, parseImageSimulation, type ImageJobTables, type ImageRenderer } from '../../../../src/service/resources/images/job.js';
import { ImageRequest, type ImageCommand } from '../../../../src/service/contract/images.js';
import { parseOrThrow } from '../../../../src/service/contract/problems.js';
import { ServiceStore } from '../../../../src/service/core/store.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

const fakeRenderer: ImageRenderer = {
  render: async (job, index) => ({ token: `t${job.id}-${index}`, thumbToken: `th${job.id}-${index}`, width: 1552, height: 1552, format: 'jpeg' }),
};

/** A POST /images body as the contract checks it: the command a job runs. */
function command(body: Record<string, unknown>): ImageCommand {
  return parseOrThrow(ImageRequest, body);
}

async function setup(balance = 100, { renderer = fakeRenderer, onError }: { renderer?: ImageRenderer; onError?: (error: Error) => void } = {}) {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const store = await ServiceStore.open<AccountTables & ImageJobTables>({ file: false, tables: ['account', 'key', 'image_job'] });
  const accounts = new Accounts(store, () => clock.now());
  const credits = new Credits(accounts);
  const jobs = new ImageJobs(store, { accounts, credits, renderer, clock, speed: 'realistic', random: () => 0.5, ...(onError ? { onError } : {}) });
  const { account, key } = accounts.create({ balance });
  const start = (body: Record<string, unknown>) => {
    const cmd = command(body);
    expect(credits.charge(account, cmd.price)).toBeNull();
    return jobs.start(account, key.id, cmd);
  };
  return { clock, jobs, account, start, store };
}

describe('ImageJobs: the state table of spec 3.3', () => {
  // Issue 29 item 3: an account's advance waits for its own renders only.
  it('says whose job is being rendered: busyOf(account) for that account only', async () => {
    let began!: () => void;
    const rendering = new Promise<void>((resolve) => (began = resolve));
    let finish!: () => void;
    const hold = new Promise<void>((resolve) => (finish = resolve));
    const renderer: ImageRenderer = { render: async (job, index) => (began(), await hold, fakeRenderer.render(job, index)) };
    const { clock, jobs, account, start } = await setup(100, { renderer });
    const job = start({ description: 'a lighthouse', count: 1 });
    expect(jobs.busyOf(account.id)).toBe(false);
    const ended = new Promise((resolve) => jobs.once('ended', resolve));
    void clock.advance(60_000, { account: account.id });
    await rendering;
    expect([jobs.busy, jobs.busyOf(account.id), jobs.busyOf(account.id + 1)]).toEqual([true, true, false]);
    finish();
    await ended;
    expect(job.status).toBe('done');
    await new Promise((resolve) => setImmediate(resolve));
    expect(jobs.busyOf(account.id)).toBe(false);
  });

  it('(none) → generating (reserved) → done, credits_charged final', async () => {
    const { clock, jobs, account, start } = await setup();
    const job = start({ description: 'a lighthouse', count: 4 });
    expect(job).toMatchObject({ status: 'generating', creditsReserved: 7, creditsCharged: null, images: [] });
    expect(account.balance).toBe(93);
    expect(job.plan.endAt - T0).toBeGreaterThanOrEqual(30_000);
    expect(job.plan.endAt - T0).toBeLessThanOrEqual(60_000);
    await clock.advance(60_000);
    expect(job).toMatchObject({ status: 'done', creditsCharged: 7, creditsRefunded: 0, errorCode: null });
    expect(job.images.map((image) => image.animate)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(new Set(job.images.map((image) => image.id)).size).toBe(4);
  });

  it('finds an image by its id for its own account only, and no longer once its images are deleted', async () => {
    const { clock, jobs, account, start } = await setup();
    const job = start({ description: 'a lighthouse', count: 4 });
    expect(jobs.image(account.id, 1)).toBeUndefined();
    await clock.advance(60_000);
    const [first, second] = job.images;
    expect(jobs.image(account.id, second!.id)).toBe(second);
    expect(jobs.image(account.id + 1, first!.id)).toBeUndefined();
    expect(jobs.deleteImages(job)).toBe(4);
    expect(jobs.image(account.id, first!.id)).toBeUndefined();
  });

  it('generating → partial when some images cannot be made: the exact unused part refunded', async () => {
    const { clock, account, start } = await setup();
    const job = start({ description: 'a garden simulate:partial', count: 4, quality: 'hd' });
    await clock.advance(60_000);
    expect(job).toMatchObject({ status: 'partial', creditsReserved: 14, creditsCharged: 11, creditsRefunded: 3 });
    expect(job.images).toHaveLength(3);
    expect(account.balance).toBe(100 - 11);
  });

  it('generating → failed: nothing charged, error_code set (simulate:fail:<code>, or a lone image that cannot be made)', async () => {
    const { clock, account, start } = await setup();
    const failed = start({ description: 'simulate:fail:copyright_blocked a logo' });
    const lone = start({ description: 'a vase simulate:partial' });
    await clock.advance(60_000);
    expect(failed).toMatchObject({ status: 'failed', errorCode: 'copyright_blocked', creditsCharged: 0, creditsRefunded: 2, images: [] });
    expect(lone).toMatchObject({ status: 'failed', errorCode: 'result_blocked', creditsCharged: 0 });
    expect(account.balance).toBe(100);
  });

  it('a character: 4 trusted photos valid 30 days, about 2 minutes, 5 credits', async () => {
    const { clock, start } = await setup();
    const job = start({ type: 'character', character: { age: '26-35', style: 'photo' } });
    expect(job.plan.endAt - T0).toBeGreaterThanOrEqual(100_000);
    await clock.advance(140_000);
    expect(job).toMatchObject({ status: 'done', creditsCharged: 5 });
    expect(job.images.map((image) => [image.animate, image.trustedUntil])).toEqual(Array(4).fill(['trusted', job.plan.endAt + 30 * 86_400_000]));
  });

  it('concurrency_limit: 3 jobs at once per account, with the seconds until one ends', async () => {
    const { clock, jobs, account, start } = await setup(1_000);
    for (let i = 0; i < 3; i++) start({ description: `job ${i}` });
    expect(jobs.limit(account.id)).toEqual({ code: 'concurrency_limit', retryAfter: 45 });
    await clock.advance(45_000);
    expect(jobs.limit(account.id)).toBeNull();
  });

  it('rate_limited: 30 jobs per 10 minutes; the 31st waits until the oldest leaves the window', async () => {
    const { clock, jobs, account, start } = await setup(1_000);
    for (let i = 0; i < 30; i++) {
      while (jobs.limit(account.id)?.code === 'concurrency_limit') await clock.advance(5_000);
      start({ description: `job ${i}` });
    }
    await clock.advance(60_000);
    // Ten rounds of three took well under 10 minutes: no job runs, yet the window is full.
    expect(clock.now() - T0).toBeLessThan(JOB_WINDOW_MS);
    const limited = jobs.limit(account.id);
    expect(limited).toEqual({ code: 'rate_limited', retryAfter: Math.ceil((T0 + JOB_WINDOW_MS - clock.now()) / 1000) });
    await clock.advance(limited!.retryAfter * 1000);
    expect(jobs.limit(account.id)).toBeNull();
  });

  it('wait: a waiter is woken when the job ends, or after its wait', async () => {
    const { clock, jobs, start } = await setup();
    const job = start({ description: 'a tree' });
    await clock.advance(20_000);
    let seen: string | null = null;
    const woken = jobs.waitFor(job, 30_000).then((j) => {
      seen = j.status;
      return clock.now() - T0;
    });
    await clock.advance(24_000);
    expect(seen).toBeNull();
    await clock.advance(6_000);
    // Woken at the job's end (45 s), not at the end of its wait (50 s).
    expect(await woken).toBe(45_000);
    expect(seen).toBe('done');
    const other = start({ description: 'a bush' });
    const timedOut = jobs.waitFor(other, 5_000);
    await clock.advance(5_000);
    expect((await timedOut).status).toBe('generating');
  });

  it('a renderer whose image token is not a string still ends the job (the file-token index files strings only): no refused put, no unhandled rejection', async () => {
    const odd: ImageRenderer = { render: async (job, index) => ({ ...(await fakeRenderer.render(job, index)), thumbToken: true as unknown as string }) };
    const errors: Error[] = [];
    const { clock, jobs, start } = await setup(100, { renderer: odd, onError: (error) => errors.push(error) });
    const job = start({ description: 'a lighthouse', count: 1 });
    const ended = new Promise((resolve) => jobs.once('ended', resolve));
    await clock.advance(60_000);
    await ended;
    expect(job.status).toBe('done');
    expect(errors).toEqual([]);
    expect(jobs.byToken(job.images[0]!.token)).toBe(job);
  });

  it('DELETE removes the images, keeps the job, refunds nothing', async () => {
    const { clock, jobs, start, account } = await setup();
    const job = start({ description: 'a boat', count: 4 });
    await clock.advance(60_000);
    expect(jobs.deleteImages(job)).toBe(4);
    expect(job).toMatchObject({ images: [], imagesDeleted: true, creditsCharged: 7 });
    expect(account.balance).toBe(93);
  });

  it('DELETE while the job runs: the job ends charged as made, and no image is written', async () => {
    const { clock, jobs, start, account } = await setup();
    const job = start({ description: 'a kite', count: 4 });
    expect(jobs.deleteImages(job)).toBe(0);
    await clock.advance(60_000);
    expect(job).toMatchObject({ status: 'done', images: [], imagesDeleted: true, creditsCharged: 7, creditsRefunded: 0 });
    expect(account.balance).toBe(93);
  });

  it('a job whose row goes while it renders (its account deleted, issue 29 item 8) is not written back, and what it made is discarded', async () => {
    let release!: () => void;
    const rendering = new Promise<void>((resolve) => (release = resolve));
    const discarded: string[] = [];
    const renderer: ImageRenderer = {
      render: async (job, index) => (await rendering, fakeRenderer.render(job, index)),
      discard: async (images) => void discarded.push(...images.map((image) => image.token)),
    };
    const { clock, jobs, start, store } = await setup(100, { renderer });
    const job = start({ description: 'a kite', count: 1 });
    const ended = clock.advance(60_000);
    await vi.waitFor(() => expect(jobs.busy).toBe(true));
    store.table('image_job').remove(job.id);
    release();
    await ended;
    await vi.waitFor(() => expect(jobs.busy).toBe(false));
    expect(store.table('image_job').get(job.id)).toBeUndefined();
    expect(discarded).toEqual([`t${job.id}-0`]);
  });

  it('generating → failed when an image cannot be made (issue 20 item 2): nothing charged, made files discarded, waiters woken', async () => {
    const discarded: string[] = [];
    const errors: string[] = [];
    const renderer: ImageRenderer = {
      render: async (job, index) => {
        if (index === 2) throw new Error('Input image exceeds pixel limit');
        return fakeRenderer.render(job, index);
      },
      discard: async (images) => void discarded.push(...images.map((image) => image.token)),
    };
    const { clock, jobs, account, start } = await setup(100, { renderer, onError: (error) => void errors.push(error.message) });
    const job = start({ description: 'a storm', count: 4, quality: 'hd' });
    const ended = jobs.waitFor(job, 30_000);
    await clock.advance(60_000);
    expect(await ended).toBe(job);
    expect(job).toMatchObject({ status: 'failed', errorCode: 'failed', images: [], creditsReserved: 14, creditsCharged: 0, creditsRefunded: 14 });
    expect(account.balance).toBe(100);
    expect(discarded).toEqual([`t${job.id}-0`, `t${job.id}-1`]);
    expect(errors).toEqual([`image job ${job.id} failed: Input image exceeds pixel limit`]);
    expect(jobs.limit(account.id)).toBeNull();
  });

  it('a job with no way to finish (a record without its plan) still ends failed when resumed, and a failed save does not keep it from ending', async () => {
    const errors: string[] = [];
    const { clock, jobs, account, start, store } = await setup(100, { onError: (error) => void errors.push(error.message) });
    const job = start({ description: 'a fog' });
    jobs.stop();
    delete (job as { plan?: unknown }).plan;
    const commit = vi.spyOn(store, 'commit').mockRejectedValue(new Error('EROFS: read-only file system'));
    jobs.resume();
    const ended = new Promise((resolve) => jobs.once('ended', resolve));
    await clock.advance(1);
    expect(await ended).toBe(job);
    expect(job).toMatchObject({ status: 'failed', errorCode: 'failed', creditsCharged: 0, creditsRefunded: 2, completedAt: T0 });
    expect(account.balance).toBe(100);
    expect(errors).toEqual([expect.stringMatching(/^image job 1 failed: /), 'cannot save the end of image job 1 yet: EROFS: read-only file system']);
    commit.mockRestore();
  });

  it('reads the markers and tells animate apart (spec 2.7)', () => {
    expect(parseImageSimulation('x simulate:fail:busy')).toEqual({ failWith: 'busy' });
    expect(parseImageSimulation('simulate:fail:nothing')).toBeNull();
    expect(parseImageSimulation('simulate:partial')).toEqual({ partial: true });
    expect(animateOf(command({ description: 'a portrait of a woman' }))).toBe('maybe');
    expect(animateOf(command({ description: 'a mountain' }))).toBe('ok');
    expect(animateOf(command({ description: 'make me smile', asset_ids: [1], subject_consent: 'self' }))).toBe('ok');
    expect(animateOf(command({ description: 'make her smile', asset_ids: [1], subject_consent: 'permission' }))).toBe('no');
  });
});
