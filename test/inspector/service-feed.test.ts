// The service side of the inspector (issue 14): a failing receiver's delivery with each attempt placed on the
// retry schedule, the next slot, Redeliver; clips and image jobs with their states; changes told as they happen.
import { afterEach, describe, expect, it } from 'vitest';
import { attemptSlots, newest, nextSlot, ServiceFeed, type ClipSummary, type DeliverySummary, type ImageSummary } from '../../src/inspector/service-feed.js';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { ImageRequest } from '../../src/service/contract/images.js';
import { VideoRequest } from '../../src/service/contract/videos.js';
import type { Caller } from '../../src/service/core/gate.js';
import { Service } from '../../src/service/service.js';
import { callerOf } from '../helpers/service-client.js';
import { recordingApp } from './fixtures.js';

const T0 = Date.parse('2026-06-01T10:00:00Z');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  let status = 500;
  const app = await recordingApp(() => status);
  cleanups.push(app.close);
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const service = await Service.open({ file: false, clock, warn: () => undefined });
  cleanups.push(() => service.close());
  const feed = new ServiceFeed(service);
  cleanups.push(async () => feed.close());
  const told = { delivery: [] as DeliverySummary[], clip: [] as ClipSummary[], image: [] as ImageSummary[] };
  feed.on('delivery', (summary) => told.delivery.push(summary));
  feed.on('clip', (summary) => told.clip.push(summary));
  feed.on('image', (summary) => told.image.push(summary));
  return { app, clock, service, feed, told, caller: callerOf(service), answer: (code: number) => (status = code) };
}

/** POST /v1/videos and /v1/images as the service runs them: the contract's parse, then the command in one unit. */
const createVideo = (service: Service, caller: Caller, body: unknown) => service.store.unit(() => service.videos.create(caller, service.videos.command(caller, VideoRequest.parse(body))));
const createImage = (service: Service, caller: Caller, body: unknown) => service.store.unit(() => service.images.create(caller, ImageRequest.parse(body)));

describe('ServiceFeed', () => {
  it("shows a failing receiver's delivery attempt by attempt on the schedule, the next slot, and Redeliver", async () => {
    const { app, clock, service, feed, told, caller, answer } = await setup();
    const made = await createVideo(service, caller, { prompt: 'a red fox in the snow', duration: 5, callback_url: `${app.url}/webhooks` });
    expect(made).toMatchObject({ id: 1, status: 'pending' });
    await clock.advance(10_000);
    await expect.poll(() => feed.deliveries()[0]?.attempts).toBe(1);

    const [summary] = feed.deliveries();
    expect(summary).toMatchObject({ event: 'video.completed', url: `${app.url}/webhooks`, state: 'pending', attempts: 1, last: { status: 500 }, videoId: '1' });
    let detail = feed.delivery(summary!.id)!;
    expect(detail.attempts).toEqual([expect.objectContaining({ n: 1, slot: 1, status: 500, response: '{"received":false,"n":1}' })]);
    expect(detail.next).toEqual({ slot: 2, delayMs: 30_000, at: detail.nextAttemptAt });
    const first = detail.attempts[0]!;
    expect(detail.nextAttemptAt! - (first.at + first.latencyMs)).toBe(30_000);
    expect(told.delivery.at(-1)).toMatchObject({ id: summary!.id, attempts: 1, state: 'pending' });

    await clock.advance(30_000);
    await expect.poll(() => feed.delivery(summary!.id)!.attempts.length).toBe(2);
    detail = feed.delivery(summary!.id)!;
    expect(detail.attempts.map((attempt) => attempt.slot)).toEqual([1, 2]);
    expect(detail.next).toMatchObject({ slot: 3, delayMs: 120_000 });

    answer(200);
    const redelivered = await feed.redeliver(summary!.id);
    // Due at once: the emitter may already have the attempt in flight when it answers.
    expect(redelivered).toMatchObject({ id: summary!.id, state: expect.stringMatching(/^(pending|delivering)$/) });
    await expect.poll(() => feed.delivery(summary!.id)!.state).toBe('delivered');
    detail = feed.delivery(summary!.id)!;
    // A redelivery starts a new round: its attempt is slot 1 again, and nothing is next.
    expect(detail.attempts.map((attempt) => [attempt.slot, attempt.status])).toEqual([[1, 500], [2, 500], [1, 200]]);
    expect(detail.next).toBeNull();
    expect(app.received).toHaveLength(3);
    expect(new Set(app.received.map((_, i) => app.header(i, 'x-service-delivery')))).toEqual(new Set([summary!.id]));
    expect(told.delivery.at(-1)).toMatchObject({ state: 'delivered', attempts: 3 });
    expect(await feed.redeliver('dlv_unknown')).toBeUndefined();
  });

  it('lists clips and image jobs with their states, newest first, and tells each change', async () => {
    const { clock, service, feed, told, caller } = await setup();
    await createVideo(service, caller, { prompt: 'first clip', duration: 5 });
    await createVideo(service, caller, { prompt: 'second clip simulate:content_rejected', duration: 5 });
    expect(feed.clips().map((clip) => [clip.id, clip.status])).toEqual([[2, 'pending'], [1, 'pending']]);
    const image = await createImage(service, caller, { description: 'a lighthouse at dusk' });
    expect(image).toMatchObject({ id: 1, status: 'generating' });
    expect(feed.images()).toEqual([expect.objectContaining({ id: 1, status: 'generating', type: 'image', images: 0, count: 1 })]);

    const ended = service.images.get(caller, 1, { waitMs: 30_000 });
    await clock.advance(10_000);
    await ended;
    expect(feed.clips().map((clip) => [clip.id, clip.status, clip.errorCode])).toEqual([[2, 'error', 'content_rejected'], [1, 'done', null]]);
    expect(told.clip.map((clip) => `${clip.id}:${clip.status}`)).toEqual(expect.arrayContaining(['1:generating', '1:done', '2:error']));
    await expect.poll(() => told.image.at(-1)?.status).toBe('done');
    expect(feed.images()[0]).toMatchObject({ status: 'done', images: 1 });
  });

  it('places attempts on the schedule by the wait between them', () => {
    const at = (ms: number, latencyMs = 0) => ({ at: T0 + ms, status: 500, error: null, latencyMs, response: null });
    expect(attemptSlots([at(0, 40), at(30_040), at(150_040, 10), at(750_050), at(750_900)])).toEqual([1, 2, 3, 4, 1]);
    expect(nextSlot({ state: 'pending', nextAttemptAt: T0 + 600_000, attempts: [at(0)] })).toEqual({ slot: 4, delayMs: 600_000, at: T0 + 600_000 });
    expect(nextSlot({ state: 'pending', nextAttemptAt: T0, attempts: [] })).toEqual({ slot: 1, delayMs: 0, at: T0 });
    expect(nextSlot({ state: 'delivered', nextAttemptAt: null, attempts: [at(0)] })).toBeNull();
  });
});

// The lists read down from the last id given, so their cost is the rows answered, not every row ever kept.
describe('newest', () => {
  const tableOf = (ids: number[]) => {
    const rows = new Map(ids.map((id) => [id, { id }]));
    let scanned = 0;
    return {
      table: { get size() { return rows.size; }, get: (id: number) => rows.get(id), values: () => (scanned++, rows.values()) },
      rows,
      scanned: () => scanned,
    };
  };

  it('answers the newest rows from the last id down, never reading the whole table', () => {
    const { table, rows, scanned } = tableOf(Array.from({ length: 100_000 }, (_, i) => i + 1));
    for (const gone of [100_000, 99_998]) rows.delete(gone);
    expect(newest(table, 100_000, 4).map((row) => row.id)).toEqual([99_999, 99_997, 99_996, 99_995]);
    expect(newest(table, 100_000, 500)).toHaveLength(500);
    expect(scanned()).toBe(0);
  });

  it('stops at the table’s size (a table emptied, or smaller than the limit)', () => {
    const empty = tableOf([]);
    expect(newest(empty.table, 1_000_000, 500)).toEqual([]);
    const three = tableOf([2, 9, 40]);
    expect(newest(three.table, 40, 500).map((row) => row.id)).toEqual([40, 9, 2]);
    expect(empty.scanned() + three.scanned()).toBe(0);
  });

  it('sorts the table instead when far more of the newest ids were removed than it answers, with the same answer', () => {
    const { table, scanned } = tableOf([1, 2, 3, 5]);
    expect(newest(table, 50_000, 3).map((row) => row.id)).toEqual([5, 3, 2]);
    expect(scanned()).toBe(1);
  });

  it('is what ServiceFeed lists clips by, through the service’s last id', async () => {
    const { service, feed, caller } = await setup();
    for (let n = 0; n < 3; n++) await createVideo(service, caller, { prompt: `fox ${n}` });
    const videos = service.store.table('video');
    const values = videos.values.bind(videos);
    videos.values = () => {
      throw new Error('the list read every clip');
    };
    try {
      expect(feed.clips({ limit: 2 }).map((clip) => clip.id)).toEqual([3, 2]);
    } finally {
      videos.values = values;
    }
  });
});
