// Issue 20 item 8: what the test clock was advanced by is part of the service's state. A restart keeps it,
// so work planned on the simulated clock resumes when it is due, not days later.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, type ServiceApp } from '../../../src/service/http/app.js';

const DAY = 86_400_000;
const apps: ServiceApp[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(file: string, options: { clock?: SimulatedClock } = {}) {
  const app = await createServiceApp({ file, warn: () => undefined, assistant: false, ...options });
  apps.push(app);
  return { app, auth: `Bearer ${app.service.first().apiKey}` };
}

async function close(app: ServiceApp) {
  apps.splice(apps.indexOf(app), 1);
  await app.close();
}

const dataFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-clock-'));
  dirs.push(dir);
  return join(dir, 'service.json');
};

describe('the simulated clock across a restart (issue 20 item 8)', () => {
  it('keeps a 2-day advance: a clip made after it is due seconds after the restart, not 2 days later; advances add up', async () => {
    const file = dataFile();
    const first = await open(file);
    expect(await request(first.app).post('/test_helpers/clock/advance').set('authorization', first.auth).send({ seconds: 2 * 86_400 })).toMatchObject({ status: 200 });
    const created = await request(first.app).post('/v1/videos').set('authorization', first.auth).send({ prompt: 'a fox' });
    expect(created.status).toBe(202);
    expect(created.body.estimated_time_seconds).toBeLessThan(10);
    await close(first.app);

    const second = await open(file);
    const clock = await request(second.app).get('/test_helpers/clock').set('authorization', second.auth);
    const ahead = Date.parse(clock.body.now) - Date.now();
    expect(ahead).toBeGreaterThan(2 * DAY - 60_000);
    expect(ahead).toBeLessThanOrEqual(2 * DAY + 1_000);
    const video = second.app.service.state.videos.get(created.body.id)!;
    expect(['pending', 'generating', 'done']).toContain(video.status);
    // The estimate a new clip's answer gives (spec 2.2 estimated_time_seconds): seconds from now to its planned end.
    // Issue 22: the key moved its own account's time, which the restart kept as well.
    expect(Math.ceil((video.plan.endAt - second.app.service.clock.nowOf(video.accountId)) / 1000)).toBeLessThan(10);

    expect((await request(second.app).post('/test_helpers/clock/advance').set('authorization', second.auth).send({ seconds: 86_400 })).status).toBe(200);
    expect(second.app.service.state.videos.get(created.body.id)!.status).toBe('done');
    await close(second.app);
    const third = await open(file);
    const later = Date.parse((await request(third.app).get('/test_helpers/clock').set('authorization', third.auth)).body.now) - Date.now();
    expect(later).toBeGreaterThan(3 * DAY - 60_000);
    expect(later).toBeLessThanOrEqual(3 * DAY + 1_000);
  });

  it('leaves a clock the caller passes in alone: it is theirs to set', async () => {
    const file = dataFile();
    const first = await open(file);
    await request(first.app).post('/test_helpers/clock/advance').set('authorization', first.auth).send({ seconds: 86_400 });
    await close(first.app);
    const start = Date.parse('2030-01-01T00:00:00Z');
    const second = await open(file, { clock: new SimulatedClock({ frozen: true, start }) });
    expect(second.app.service.clock.now()).toBe(start);
  });
});
