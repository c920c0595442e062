// The photo upload page of the assistant endpoint (issue 15) in a real browser: a person picks a photo, says
// who is in it with the keyboard, and sends it; without a choice the page says so and nothing is stored.
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';
import { screenshot, seriousViolations, useBrowser } from '../../helpers/browser.js';

const { run, cleanups, browser: launched } = useBrowser();

let started: StartedService | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
});

async function openLink(colorScheme: 'light' | 'dark' = 'light'): Promise<{ page: Page; service: StartedService; errors: string[] }> {
  started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
  const { token } = started.service.photoUploads.create({ accountId: 1, keyId: 'key_1' });
  const page = await launched().page({ colorScheme });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  cleanups.push(() => page.close());
  await page.goto(`${started.origin}/photos/upload/${token}`);
  return { page, service: started, errors };
}

const photo = async () => ({ name: 'me.png', mimeType: 'image/png', buffer: await sharp({ create: { width: 64, height: 48, channels: 3, background: '#4477aa' } }).png().toBuffer() });

describe.skipIf(!run)('the photo upload page in Chromium', () => {
  it('picks a photo, chooses who is in it by keyboard, sends it and shows the confirmation; axe passes', async () => {
    const { page, service, errors } = await openLink();
    expect(await page.title()).toBe('Upload a photo · cliphook');
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel('Photo', { exact: true }).setInputFiles(await photo());
    await page.locator('#photo-preview:not([hidden])').waitFor();
    // Keyboard only: Tab from the file input reaches the first choice, the arrows move between choices.
    await page.getByLabel('Photo', { exact: true }).focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('consent-self');
    await page.keyboard.press('Space');
    await page.keyboard.press('ArrowDown');
    expect(await page.getByLabel('Someone who agreed').isChecked()).toBe(true);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('photo-submit');
    await screenshot(page, 'photo-upload-light');
    await page.keyboard.press('Enter');

    const received = page.getByRole('status').filter({ hasText: 'Photo received.' });
    await received.waitFor();
    expect(await page.locator('#photo-upload').isHidden()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('photo-received-notice');
    const assets = [...service.service.store.table('asset').values()];
    expect(assets).toHaveLength(1);
    expect(assets[0]).toMatchObject({ subjectConsent: 'permission', mimeType: 'image/png', status: 'pending' });
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'photo-upload-received-light');
    expect(errors).toEqual([]);
  }, 60_000);

  it('a submit without a choice of who is in the photo shows the error, stores nothing, and passes axe in dark', async () => {
    const { page, service, errors } = await openLink('dark');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Photo', { exact: true }).setInputFiles(await photo());
    await page.getByRole('button', { name: 'Upload photo' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe('Choose who is in the photo.');
    expect(await page.locator('#photo-consent').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('consent-self');
    expect(service.service.store.table('asset').size).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'photo-upload-error-dark');

    // The server refuses too, should the script's check be bypassed: the page shows its words.
    await page.evaluate(() => {
      const self = document.querySelector<HTMLInputElement>('input[value="self"]')!;
      self.value = '';
      self.checked = true;
      document.getElementById('message')!.replaceChildren();
    });
    await page.getByRole('button', { name: 'Upload photo' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Choose who is in the photo.');
    expect(service.service.store.table('asset').size).toBe(0);
    expect(errors).toEqual([]);
  }, 60_000);
});

describe('the photo upload runs POST /v1/assets’ chain for the link’s account (issue 31 item 1)', () => {
  const send = async (svc: StartedService, token: string) => {
    const form = new FormData();
    const { buffer, name, mimeType } = await photo();
    form.append('subject_consent', 'self');
    form.append('file', new Blob([new Uint8Array(buffer)], { type: mimeType }), name);
    return fetch(`${svc.origin}/photos/upload/${token}`, { method: 'POST', headers: { origin: svc.origin, accept: 'application/json' }, body: form });
  };

  it('is journalled as uploadAsset of the link’s account, its path without the token', async () => {
    started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    const { token } = started.service.photoUploads.create({ accountId: 1, keyId: 'key_1' });
    const res = await send(started, token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ object: 'photo_upload', status: 'received', asset_id: 1 });
    const { data } = await started.requests.list({ operation: 'uploadAsset' });
    expect(data).toEqual([expect.objectContaining({ method: 'POST', path: '/photos/upload/{token}', status: 200, code: null, account: 1 })]);
    expect(JSON.stringify(data)).not.toContain(token);
  });

  it('a fault rule on uploadAsset acts on the page: refused, nothing stored, and the link still takes the photo', async () => {
    started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    const { token } = started.service.photoUploads.create({ accountId: 1, keyId: 'key_1' });
    const rule = await started.faults.add({ match: { operation: 'uploadAsset' }, times: 1, action: { problem: 'upstream_busy' } });
    const refused = await send(started, token);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: 'upstream_busy', instance: `/photos/upload/${token}` });
    expect(started.service.store.table('asset').size).toBe(0);
    expect((await started.faults.list()).data).toEqual([expect.objectContaining({ id: rule.id, applied: 1 })]);
    expect((await send(started, token)).status).toBe(200);
    expect(started.service.store.table('asset').size).toBe(1);
  });
});
