// The assistant's authorization page in a real browser: the SDK client starts the sign-in, Chromium opens
// the authorization URL, the person signs in with an API key, sets the daily limit and approves (or
// declines), and the browser lands on the assistant's own callback with the code.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { startService, type StartedService } from '../../../../src/service/http/app.js';
import { screenshot, seriousViolations, useBrowser } from '../../../helpers/browser.js';
import { MemoryOAuthClient } from '../oauth-helpers.js';

const { run, cleanups, browser: launched } = useBrowser();

let started: StartedService | undefined;
let callback: Server | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
  callback?.closeAllConnections();
  await new Promise((resolve) => (callback ? callback.close(resolve) : resolve(undefined)));
  callback = undefined;
});

/** The assistant's redirect URI: a page on this machine that records what it was sent. */
async function startCallback(): Promise<{ url: string; received: URLSearchParams[] }> {
  const received: URLSearchParams[] = [];
  callback = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    received.push(url.searchParams);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html lang="en"><title>Assistant</title><main><h1>Back in the assistant</h1></main></html>');
  });
  await new Promise<void>((resolve) => callback!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`, received };
}

async function beginSignIn(colorScheme: 'light' | 'dark' = 'light') {
  started = await startService({ clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
  const back = await startCallback();
  const oauth = new MemoryOAuthClient({ client_name: 'Browser Assistant', redirect_uris: [back.url] });
  const transport = new StreamableHTTPClientTransport(new URL(`${started.origin}/mcp`), { authProvider: oauth });
  await expect(new Client({ name: 'assistant', version: '1.0.0' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  const page = await launched().page({ colorScheme });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  cleanups.push(() => page.close());
  await page.goto(oauth.authorizationUrl!.href);
  return { page, oauth, transport, back, errors, service: started };
}

describe.skipIf(!run)('the assistant authorization page in Chromium', () => {
  it('signs in with an API key, sets the daily limit by keyboard, approves, and the assistant gets a working token', async () => {
    const { page, oauth, transport, back, errors, service } = await beginSignIn();
    expect(await page.title()).toBe('Connect an assistant · cliphook');
    expect(await page.getByText('Browser Assistant').count()).toBeGreaterThan(0);
    expect(await page.locator('dl.facts').textContent()).toContain(new URL(back.url).host);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel('API key of the account').fill(service.apiKey);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('daily_limit');
    await page.keyboard.type('25');
    await screenshot(page, 'consent-light');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (document.activeElement as HTMLButtonElement | null)?.value)).toBe('approve');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.href.startsWith(back.url));
    expect(await page.textContent('h1')).toBe('Back in the assistant');

    const answer = back.received.at(-1)!;
    expect(answer.get('code')).toBeTruthy();
    await transport.finishAuth(answer);
    const client = new Client({ name: 'assistant', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${service.origin}/mcp`), { authProvider: oauth }));
    const account = (await client.callTool({ name: 'get_account', arguments: {} })) as { structuredContent?: { assistant?: { daily_limit?: number } } };
    expect(account.structuredContent?.assistant?.daily_limit).toBe(25);
    await client.close();
    expect(errors).toEqual([]);
  }, 60_000);

  it('shows a wrong API key as an error on the page (axe passes in dark), and a decline returns access_denied', async () => {
    const { page, back, errors } = await beginSignIn('dark');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('API key of the account').fill('sk_not_this_one');
    await page.getByRole('button', { name: 'Approve' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('unknown or was revoked');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'consent-error-dark');

    // Decline needs no key: the button skips the form's required field.
    await page.getByRole('button', { name: 'Decline' }).click();
    await page.waitForURL((url) => url.href.startsWith(back.url));
    expect(back.received.at(-1)!.get('error')).toBe('access_denied');
    expect(errors).toEqual([]);
  }, 60_000);
});
