// The service inspector of `cliphook serve` in a real browser (issue 14): a failing receiver's delivery shows
// its attempts on the retry schedule and the next slot, live, and Redeliver sends it again.
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { serve } from '../../src/cli/commands/serve.js';
import { openInspectorPage, screenshot, seriousViolations, useBrowser } from '../helpers/browser.js';
import { testdir } from '../relay/fixtures.js';
import { recordingApp } from './fixtures.js';

const { run, cleanups, browser: launched } = useBrowser();

interface Ready {
  origin: string;
  apiKey: string;
  inspector: string;
}

/** Runs `cliphook serve --json` in process until the file's end; resolves with its ready record. */
async function startServe(): Promise<Ready> {
  const { dir, cleanup } = await testdir();
  cleanups.push(cleanup);
  const controller = new AbortController();
  let ready!: (record: Ready) => void;
  const started = new Promise<Ready>((resolve) => (ready = resolve));
  const running = serve(
    { port: '0', host: '127.0.0.1', data: join(dir, 'service.json'), speed: 'fast', json: true, inspect: '0' },
    { out: (line) => ready(JSON.parse(line) as Ready), err: () => undefined, signal: controller.signal },
  );
  cleanups.push(async () => {
    controller.abort();
    await running;
  });
  return Promise.race([started, running.then(() => Promise.reject(new Error('serve ended')))]);
}

const openPage = (url: string, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> => openInspectorPage(launched(), url, cleanups, colorScheme);

describe.skipIf(!run)('the service inspector of cliphook serve in Chromium', () => {
  let ready: Ready;
  let app: Awaited<ReturnType<typeof recordingApp>>;
  let status = 500;
  const call = (path: string, body: unknown) =>
    fetch(`${ready.origin}${path}`, { method: 'POST', headers: { authorization: `Bearer ${ready.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  beforeAll(async () => {
    app = await recordingApp(() => status);
    cleanups.push(app.close);
    ready = await startServe();
  }, 60_000);

  it("shows a failing receiver's delivery with its attempts and next slot, live, and Redeliver sends it again", async () => {
    expect(ready.inspector).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await openPage(new URL('/service', ready.inspector).href);
    expect(await page.locator('[role="option"]').count()).toBe(0);

    expect((await call('/v1/videos', { prompt: 'a red fox in the snow', duration: 5, callback_url: `${app.url}/webhooks` })).status).toBe(202);
    expect((await call('/test_helpers/clock/advance', { seconds: 10 })).status).toBe(200);
    await expect.poll(() => app.received.length).toBe(1);

    // The delivery appears without a reload, pending its second attempt after a 500.
    const row = page.locator('[role="option"]').first();
    await expect.poll(() => row.textContent()).toMatch(/^created \d\d:\d\d:\d\d, video\.completed, delivery dlv_\w+, video 1, pending, attempts 1, last status 500, next attempt \d\d:\d\d:\d\d$/);
    await row.click();
    await page.locator('#attempts').waitFor();
    expect(await page.locator('#attempts tbody tr').count()).toBe(1);
    expect(await page.locator('#attempts tbody tr').first().textContent()).toMatch(/^11 · at once.*500\d+ ms\{"received":false,"n":1\}$/);
    expect(await page.locator('#next-slot').textContent()).toMatch(/^attempt 2, slot 2 \(\+30 s\) at .*, in \d+ s$/);
    expect(await page.locator('.schedule li.next').textContent()).toBe('2 · +30 s');

    // The clock moves 30 s: the second attempt shows up in the open detail by itself.
    expect((await call('/test_helpers/clock/advance', { seconds: 30 })).status).toBe(200);
    await expect.poll(() => page.locator('#attempts tbody tr').count()).toBe(2);
    expect(await page.locator('#attempts tbody tr').nth(1).textContent()).toMatch(/^22 · \+30 s.*500/);
    expect(await page.locator('#next-slot').textContent()).toMatch(/slot 3 \(\+2 min\)/);
    await screenshot(page, 'service-deliveries-light');

    status = 200;
    await page.locator('#redeliver').click();
    await expect.poll(() => page.locator('.result').textContent()).toMatch(/^Redelivery of dlv_\w+ queued/);
    await expect.poll(() => app.received.length).toBe(3);
    expect(new Set(app.received.map((_, i) => app.header(i, 'x-service-delivery'))).size).toBe(1);
    await expect.poll(() => page.locator('#attempts tbody tr').count()).toBe(3);
    expect(await page.locator('#attempts tbody tr').nth(2).textContent()).toMatch(/^31 · at once.*200/);
    await expect.poll(() => page.locator('.detail-head').textContent()).toContain('delivered');
    expect(await page.locator('#next-slot').textContent()).toBe('none: it has been delivered');
    await expect.poll(() => row.textContent()).toMatch(/, delivered, attempts 3, last status 200, next attempt —$/);
    expect(await seriousViolations(page)).toEqual([]);
  }, 60_000);

  it('shows the clips and image jobs with their states, and passes axe light and dark', async () => {
    expect((await call('/v1/images', { description: 'a lighthouse at dusk' })).status).toBe(202);
    expect((await call('/test_helpers/clock/advance', { seconds: 10 })).status).toBe(200);
    for (const scheme of ['light', 'dark'] as const) {
      const page = await openPage(new URL('/service', ready.inspector).href, scheme);
      await page.locator('[role="option"]').first().click();
      await page.locator('#attempts').waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      if (scheme === 'dark') await screenshot(page, 'service-deliveries-dark');

      await page.getByRole('tab', { name: 'Clips' }).click();
      const clips = page.locator('#panel-clips tbody tr');
      await expect.poll(() => clips.count()).toBe(1);
      expect(await clips.first().textContent()).toMatch(/^1done.*a?\d+ s/);
      expect(await clips.first().textContent()).toContain(`${app.url}/webhooks`);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, `service-clips-${scheme}`);

      // Keyboard: the tabs move with the arrow keys.
      await page.keyboard.press('ArrowRight');
      expect(await page.getByRole('tab', { name: 'Image jobs' }).getAttribute('aria-selected')).toBe('true');
      const jobs = page.locator('#panel-images tbody tr');
      await expect.poll(() => jobs.count()).toBe(1);
      expect(await jobs.first().textContent()).toMatch(/^1done.*1 of 1/);
      expect(await seriousViolations(page)).toEqual([]);
    }
  }, 60_000);
});
