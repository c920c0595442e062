// The listen inspector in a real browser (Debian's Chromium through playwright-core): events sent through
// relay + `cliphook listen` appear live, the detail shows the exact bytes, Replay resends them, the list
// survives a restart, 10,000 events stay windowed, and axe finds no serious violation (issue 14).
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, createRelayServer, sign, type RelayServer } from 'cliphook';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { startInspector } from '../../src/inspector/server.js';
import { openInspectorPage, screenshot, seriousViolations, useBrowser } from '../helpers/browser.js';
import { eventText, SECRET, signedHeaders, testdir } from '../relay/fixtures.js';
import { exchangeFixture, recordingApp, runListen } from './fixtures.js';

const { run, cleanups, browser: launched } = useBrowser();

/** The row of the list that shows `text`. */
const row = (page: Page, text: string) => page.locator('[role="option"]', { hasText: text });

const openPage = (url: string, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> => openInspectorPage(launched(), url, cleanups, colorScheme);

describe.skipIf(!run)('the listen inspector in Chromium', () => {
  let relay: RelayServer;
  let relayUrl: string;
  let app: Awaited<ReturnType<typeof recordingApp>>;
  let dir: string;
  let listen: Awaited<ReturnType<typeof runListen>>;
  let channelUrl: string;
  const state = () => join(dir, 'listen.json');

  beforeAll(async () => {
    const made = await testdir();
    dir = made.dir;
    cleanups.push(made.cleanup);
    relay = createRelayServer({ file: false });
    relayUrl = (await relay.listen(0, '127.0.0.1')).url;
    cleanups.push(() => relay.close());
    app = await recordingApp(({ event }) => (event === 'video.failed' ? 500 : 200));
    cleanups.push(app.close);
    listen = await runListen({ relay: relayUrl, forwardTo: `${app.url}/webhooks`, secret: SECRET, state: state() });
    channelUrl = /Forwarding (\S+) ->/.exec(listen.lines.find((line) => line.startsWith('Ready!'))!)![1]!;
  }, 60_000);
  afterAll(async () => {
    await listen?.stop();
  });

  it('shows an event sent through relay + listen without a reload, with its exact body, reply and signature', async () => {
    const page = await openPage(listen.inspector!);
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    const body = eventText(101);
    const res = await fetch(channelUrl, { method: 'POST', body, headers: signedHeaders(body, 'dlv_browser_1') });
    expect(res.status).toBe(200);

    const item = row(page, 'dlv_browser_1');
    await item.waitFor();
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    await expect.poll(() => item.textContent()).toMatch(/^\d\d:\d\d:\d\d, video\.completed, delivery dlv_browser_1, video 101, status 200, \d+ ms, ✓signature verifies$/);

    await item.click();
    await page.locator('#request-body').waitFor();
    await page.getByRole('button', { name: 'Raw' }).first().click();
    expect(await page.locator('#request-body').textContent()).toBe(body);
    await page.getByRole('button', { name: 'Pretty' }).first().click();
    // Pretty-printed token by token: the integer above 2^53 keeps every digit.
    expect(await page.locator('#request-body').textContent()).toContain('"trace": 90071992547409931234');
    expect(await page.locator('#reply-status').textContent()).toMatch(/^Status 200 in \d+ ms$/);
    expect(await page.locator('#reply-body').textContent()).toContain('"received": true');
    expect(await page.locator('table.headers').first().textContent()).toContain('dlv_browser_1');
    await expect.poll(() => page.locator('dl.meta').textContent()).toMatch(/Signature✓ verifies/);
  }, 60_000);

  it('Replay sends the same bytes to the local app again; replay with edits re-signs them with --secret', async () => {
    const page = await openPage(listen.inspector!);
    const body = eventText(102);
    await fetch(channelUrl, { method: 'POST', body, headers: signedHeaders(body, 'dlv_browser_2') });
    await row(page, 'dlv_browser_2').first().click();
    await page.locator('#request-body').waitFor();
    const before = app.received.length;
    const original = app.received.findIndex((request) => request.body.equals(Buffer.from(body)));
    expect(original).toBeGreaterThanOrEqual(0);

    await page.locator('#replay').click();
    await expect.poll(() => page.locator('.result').textContent()).toMatch(/^Replayed as #\d+: 200 in \d+ ms/);
    expect(app.received.length).toBe(before + 1);
    expect(app.received[before]!.body.equals(Buffer.from(body))).toBe(true);
    expect(app.header(before, 'x-service-signature')).toBe(app.header(original, 'x-service-signature'));
    expect(app.header(before, 'x-service-delivery')).toBe('dlv_browser_2');
    // The replay is a row of its own, live.
    await row(page, 'replay of #').first().waitFor();
    await listen.waitFor(/<-- \[200\] POST .* \(replay of #\d+ from the inspector\)/);

    await page.locator('#replay-edit').click();
    const edited = body.replace('"credits_used":18', '"credits_used":99');
    await page.locator('#edit-body').fill(edited);
    await page.locator('#send-edited').click();
    await expect.poll(() => page.locator('.result').textContent()).toMatch(/^Replayed as #\d+: 200/);
    const sent = app.received[before + 1]!;
    const text = sent.body.toString('utf8');
    expect(text).toContain('"credits_used":99');
    // delivered_at made fresh (the box is ticked by default), everything else as typed.
    expect(text.replace(/"delivered_at":"[^"]+"/, '')).toBe(edited.replace(/"delivered_at":"[^"]+"/, ''));
    expect(Date.now() - Date.parse(/"delivered_at":"([^"]+)"/.exec(text)![1]!)).toBeLessThan(60_000);
    expect(app.header(before + 1, 'x-service-signature')).toBe(sign(sent.body, SECRET));
  }, 60_000);

  it('filters by event and by status', async () => {
    const page = await openPage(listen.inspector!);
    const failed = eventText(103).replace('"event":"video.completed"', '"event":"video.failed"');
    const res = await fetch(channelUrl, { method: 'POST', body: failed, headers: { ...signedHeaders(failed, 'dlv_browser_failed'), 'x-service-event': 'video.failed' } });
    expect(res.status).toBe(500);
    await row(page, 'dlv_browser_failed').waitFor();
    await page.locator('#f-status').selectOption('5xx');
    await expect.poll(() => page.locator('[role="option"]').count()).toBe(1);
    await page.locator('#f-status').selectOption('');
    await page.locator('#f-event').selectOption('video.completed');
    await expect.poll(async () => (await page.locator('[role="option"]').allTextContents()).some((text) => text.includes('dlv_browser_failed'))).toBe(false);
    expect(await page.locator('[role="option"]').count()).toBeGreaterThanOrEqual(3);
    expect(await page.locator('.count').textContent()).toMatch(/^\d+ of \d+ events$/);
  }, 60_000);

  it('keeps the list across a restart of listen, and adds what the relay buffered meanwhile', async () => {
    await listen.stop();
    const body = eventText(104);
    const buffered = await fetch(channelUrl, { method: 'POST', body, headers: signedHeaders(body, 'dlv_while_down') });
    expect(buffered.status).toBe(503);
    listen = await runListen({ relay: relayUrl, forwardTo: `${app.url}/webhooks`, secret: SECRET, state: state() });
    const page = await openPage(listen.inspector!);
    await row(page, 'dlv_while_down').waitFor();
    expect(await row(page, 'dlv_while_down').textContent()).toContain('buffered');
    // From the log beside the state file: the events of the previous run.
    expect(await row(page, 'dlv_browser_1').count()).toBe(1);
    expect(await row(page, 'dlv_browser_2').count()).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('passes axe with no serious violation, and saves screenshots of the list and the detail, light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const page = await openPage(listen.inspector!, scheme);
      await row(page, 'dlv_browser_1').waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, `listen-list-${scheme}`);
      await row(page, 'dlv_browser_1').click();
      await page.locator('#request-body').waitFor();
      await page.locator('#replay-edit').click();
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole('button', { name: 'Cancel' }).click();
      await screenshot(page, `listen-detail-${scheme}`);
    }
  }, 90_000);
});

describe.skipIf(!run)('the windowed list in Chromium', () => {
  it('holds 10,000 events with a bounded number of rows in the DOM, scrolls and moves by keyboard, and nothing shifts as events stream in', async () => {
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log: false });
    for (let n = 1; n <= 10_000; n++) recorder.record(exchangeFixture(n));
    const inspector = await startInspector({ port: 0, listen: recorder });
    cleanups.push(() => inspector.close());

    const page = await launched().page();
    cleanups.push(() => page.close());
    const started = Date.now();
    await page.goto(inspector.url);
    await expect.poll(() => page.locator('.count').textContent(), { timeout: 15_000 }).toBe('10000 events');
    const loadMs = Date.now() - started;
    const rows = () => page.locator('[role="option"]').count();
    expect(await rows()).toBeLessThanOrEqual(40);
    expect(await rows()).toBeGreaterThan(10);
    expect(await page.locator('[role="option"]').first().textContent()).toContain('dlv_010000');
    expect(loadMs).toBeLessThan(10_000);

    // Keyboard: End selects the oldest, which is then in view; the DOM stays bounded.
    await page.locator('[role="listbox"]').focus();
    await page.keyboard.press('End');
    const selected = page.locator('[role="option"][aria-selected="true"]');
    await expect.poll(() => selected.textContent()).toContain('dlv_000001');
    expect(await selected.getAttribute('aria-posinset')).toBe('10000');
    expect(await selected.getAttribute('aria-setsize')).toBe('10000');
    expect(await page.locator('[role="listbox"]').getAttribute('aria-activedescendant')).toBe(await selected.getAttribute('id'));
    expect(await rows()).toBeLessThanOrEqual(40);
    await page.keyboard.press('ArrowUp');
    await expect.poll(() => selected.textContent()).toContain('dlv_000002');
    await page.keyboard.press('Home');
    await expect.poll(() => selected.textContent()).toContain('dlv_010000');

    // Scrolled into the middle, 200 new events arrive: what is on screen stays put, and nothing shifts.
    await page.locator('[role="listbox"]').evaluate((list) => (list.scrollTop = 32 * 5000));
    await expect.poll(() => page.locator('[role="option"]').allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('dlv_005000')]));
    const firstVisible = () =>
      page.evaluate(() => {
        const list = document.querySelector('[role="listbox"]')!;
        const top = list.getBoundingClientRect().top;
        const options = [...list.querySelectorAll('[role="option"]')].filter((el) => el.getBoundingClientRect().top >= top - 1);
        options.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
        return options[0]!.textContent;
      });
    const before = await firstVisible();
    await page.evaluate(() => {
      (window as unknown as { shift: number }).shift = 0;
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) (window as unknown as { shift: number }).shift += (entry as unknown as { value: number }).value;
      }).observe({ type: 'layout-shift' });
    });
    for (let n = 10_001; n <= 10_200; n++) recorder.record(exchangeFixture(n));
    await expect.poll(() => page.locator('.count').textContent()).toBe('10000 events');
    await expect.poll(() => page.locator('[role="listbox"]').evaluate((list) => list.scrollTop)).toBe(32 * 5200);
    expect(await firstVisible()).toBe(before);
    expect(await page.evaluate(() => (window as unknown as { shift: number }).shift)).toBe(0);
    expect(await rows()).toBeLessThanOrEqual(40);
  }, 90_000);
});
