// The top-up page: where a 402's user_action and the assistant's get_topup_link send a person. Over HTTP
// for its refusals, and in Chromium for the person's path through it.
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';
import { screenshot, seriousViolations, useBrowser } from '../../helpers/browser.js';
import { call, connect } from '../assistant/fixtures.js';

const { run, cleanups, browser: launched } = useBrowser();

let started: StartedService | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
});

const post = (svc: StartedService, fields: Record<string, string>, origin = svc.origin) =>
  fetch(`${svc.origin}/settings/top-up/form`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin, accept: 'text/html' }, body: new URLSearchParams(fields).toString() });

describe('the top-up page over HTTP', () => {
  it('is the link get_topup_link gives; adds credits with a key of the account, and refuses the rest with a page', async () => {
    started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    const client = await connect(started);
    const link = await call(client, 'get_topup_link');
    expect(link.data.url).toBe(`${started.origin}/settings/top-up`);
    const page = await fetch(String(link.data.url));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).toContain('Add credits');

    expect((await post(started, { api_key: started.apiKey, credits: '50' }, 'https://evil.example')).status).toBe(403);
    const bad = await post(started, { api_key: started.apiKey, credits: '2.5' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('whole number');
    expect((await post(started, { api_key: 'sk_wrong_key_123', credits: '50' })).status).toBe(401);
    expect(started.service.first().balance).toBe(1000);

    const added = await post(started, { api_key: started.apiKey, credits: '50' });
    expect(added.status).toBe(200);
    expect(await added.text()).toContain('The balance is now 1,050 credits.');
    // The account has topped up once: its assistants' default daily limit is 30 from now on.
    expect((await call(client, 'get_account')).data.assistant).toMatchObject({ daily_limit: 30 });
  });
});

describe.skipIf(!run)('the top-up page in Chromium', () => {
  it('a person signs in with the key, adds credits and sees the balance; axe passes in light and dark', async () => {
    started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    for (const colorScheme of ['light', 'dark'] as const) {
      const page = await launched().page({ colorScheme });
      cleanups.push(() => page.close());
      await page.goto(`${started.origin}/settings/top-up`);
      expect(await page.title()).toBe('Add credits · cliphook');
      expect(await seriousViolations(page)).toEqual([]);
      if (colorScheme === 'dark') {
        await page.getByLabel('Credits to add').fill('5');
        await page.getByRole('button', { name: 'Add credits' }).click();
        // The browser's own check: no key, no post.
        expect(await page.evaluate(() => (document.getElementById('api_key') as HTMLInputElement).validity.valueMissing)).toBe(true);
        await screenshot(page, 'top-up-dark');
        continue;
      }
      await page.getByLabel('API key of the account').fill(started.apiKey);
      await page.keyboard.press('Tab');
      await page.keyboard.type('250');
      await page.keyboard.press('Enter');
      const status = page.getByRole('status');
      await status.waitFor();
      expect(await status.textContent()).toContain('The balance is now 1,250 credits.');
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'top-up-done-light');
    }
    expect(started.service.first().balance).toBe(1250);
  }, 60_000);
});

describe('the top-up form runs POST /settings/top-up’s chain (issue 31 item 1)', () => {
  it('is journalled as topUp at the form’s path, with the credits and never the key', async () => {
    started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    expect((await post(started, { api_key: started.apiKey, credits: '25' })).status).toBe(200);
    expect((await post(started, { api_key: 'sk_wrong_key_1234567890abc', credits: '25' })).status).toBe(401);
    const { data } = await started.requests.list({ operation: 'topUp' });
    expect(data.map(({ method, path, status, code, account, key_id, body }) => ({ method, path, status, code, account, key_id, body }))).toEqual([
      // As on /v1: a request refused before its body is read journals none.
      { method: 'POST', path: '/settings/top-up/form', status: 401, code: 'invalid_api_key', account: null, key_id: null, body: null },
      { method: 'POST', path: '/settings/top-up/form', status: 200, code: null, account: 1, key_id: expect.stringMatching(/^key_/), body: { credits: 25 } },
    ]);
    expect(JSON.stringify(data)).not.toContain(started.apiKey);
  });

  it('a fault rule on topUp acts on the form too: the page refuses with the rule’s status and nothing is added', async () => {
    started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    const rule = await started.faults.add({ match: { operation: 'topUp' }, times: 1, action: { problem: 'upstream_busy' } });
    const refused = await post(started, { api_key: started.apiKey, credits: '50' });
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain('nothing was added');
    expect(started.service.first().balance).toBe(1000);
    expect((await started.faults.list()).data).toEqual([expect.objectContaining({ id: rule.id, applied: 1 })]);
    expect((await post(started, { api_key: started.apiKey, credits: '50' })).status).toBe(200);
    expect(started.service.first().balance).toBe(1050);
  });
});
