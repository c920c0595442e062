import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service } from '../../../../src/service/service.js';
import { callerOf } from '../../../helpers/service-client.js';

const services: Service[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.close();
});

const fakeEmitter = () => ({ send: async () => undefined, stop: async () => undefined }) as unknown as WebhookEmitter;

async function open() {
  const service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), emitter: fakeEmitter(), random: () => 0.5 });
  services.push(service);
  return service;
}

/** Seeds `count` done image jobs of 4 images for an account; answers the jobs' ids by name. */
async function seedJobs(service: Service, account: string, count: number, prefix = 'img'): Promise<number[]> {
  const accounts = account === 'default' ? [] : [{ name: account }];
  const { images } = await service.seeds.run({ accounts, images: Array.from({ length: count }, (_, i) => ({ name: `${prefix}${i}`, account, status: 'done', count: 4 })) });
  return Array.from({ length: count }, (_, i) => images[`${prefix}${i}`]!);
}

const fileNames = (service: Service, id: number) => {
  const job = service.store.table('image_job').get(id)!;
  return job.images.flatMap((image) => [`${image.token}.jpg`, image.token, `${image.thumbToken}.webp`]);
};

describe('image file links are one lookup (issue 29 follow-up item 2)', () => {
  it('finds a file by its link without reading the image job rows, however many jobs exist', async () => {
    const service = await open();
    const ids = await seedJobs(service, 'default', 500);
    const names = fileNames(service, ids[250]!);
    const values = vi.spyOn(service.store.table('image_job'), 'values');
    for (const name of names) expect(service.images.file(name)).toMatchObject({ path: expect.any(String) });
    expect(service.images.file(`${'A'.repeat(32)}.jpg`)).toBeNull();
    // The extension must be the file's own.
    expect(service.images.file(names[0]!.replace('.jpg', '.webp'))).toBeNull();
    expect(values).not.toHaveBeenCalled();
  });

  it('keeps the index in step with a job deleted, an account deleted and a reset', async () => {
    const service = await open();
    const [mine] = await seedJobs(service, 'default', 1);
    const [theirs] = await seedJobs(service, 'other', 1, 'theirs');
    const other = service.store.table('image_job').get(theirs!)!.accountId;
    const deleted = fileNames(service, mine!);
    const ownedByOther = fileNames(service, theirs!);
    expect(service.images.file(deleted[0]!)).not.toBeNull();

    await service.images.remove(callerOf(service), mine!);
    for (const name of deleted) expect(service.images.file(name)).toBeNull();

    expect(service.images.file(ownedByOther[0]!)).not.toBeNull();
    await service.testAccounts.remove(other);
    for (const name of ownedByOther) expect(service.images.file(name)).toBeNull();

    const [again] = await seedJobs(service, 'default', 1, 'again');
    const kept = fileNames(service, again!);
    expect(service.images.file(kept[0]!)).not.toBeNull();
    await service.reset();
    for (const name of kept) expect(service.images.file(name)).toBeNull();
  });

  it("lists an account's jobs and checks its limits without reading another account's jobs", async () => {
    const service = await open();
    await seedJobs(service, 'default', 500);
    const mine = await seedJobs(service, 'other', 3, 'mine');
    const other = service.store.table('image_job').get(mine[0]!)!.accountId;
    const values = vi.spyOn(service.store.table('image_job'), 'values');
    expect(service.state.images.list(other, { limit: 2, before: null }).map((job) => job.id)).toEqual([mine[2], mine[1]]);
    expect(service.state.images.list(other, { limit: 10, before: mine[1]! }).map((job) => job.id)).toEqual([mine[0]]);
    // Three seeded jobs made now: within the window of 30, none generating.
    expect(service.state.images.limit(other)).toBeNull();
    expect(values).not.toHaveBeenCalled();
  });
});

